// Completion callbacks checked by the Standard Webhooks reference library
// (`standardwebhooks`): a node:http receiver on 127.0.0.1 gets the gateway's
// callback, and `new Webhook(secret).verify(body, headers)` accepts it as sent
// and refuses it once the body, the id or the secret is wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { startGateway, api, waitFor } from './lib/gateway.mjs';
import { resources, step, stepsSoFar, watchdog } from './lib/harness.mjs';

watchdog(60000, 'webhook_signature.test.mjs');

// A receiver that records every request's raw body and headers and answers 200.
async function startReceiver() {
  const received = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method, url: req.url, headers: { ...req.headers }, body: Buffer.concat(chunks) });
      res.writeHead(200, { 'Content-Length': '0' });
      res.end();
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    received,
    url: `http://127.0.0.1:${server.address().port}/hook`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

// POST a message with a callback_url and read its SSE answer to the end.
async function runWithCallback(gateway, sessionId, content, callbackUrl) {
  const res = await fetch(`${gateway.url}/sessions/${sessionId}/messages`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ content, callback_url: callbackUrl }),
    signal: AbortSignal.timeout(20000),
  });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  assert.match(body, /event: done/);
  return { runId: res.headers.get('x-run-id'), body };
}

const signatureHeaders = (h) => ({
  'webhook-id': h['webhook-id'],
  'webhook-timestamp': h['webhook-timestamp'],
  'webhook-signature': h['webhook-signature'],
});

test('standardwebhooks: the reference library verifies the gateway\'s signed callback', { timeout: 30000 }, async () => {
  const r = resources();
  let gateway;
  try {
    step('webhooks: start the receiver and the gateway with a secret');
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const receiver = r.add(await startReceiver(), (x) => x.close(), 'the receiver');
    gateway = r.add(await startGateway({
      GATEWAY_WEBHOOK_SECRET: secret,
      GATEWAY_WEBHOOK_ALLOW_PRIVATE: '1',
      GATEWAY_WEBHOOK_RETRY_SCHEDULE: '0.05,0.1',
    }), (g) => g.stop(), 'the gateway');
    const session = await api(gateway.url, 'POST', '/sessions', {});
    const content = 'sign me: "quotes", \\ backslash, ünïcødé ✓ and 😀';
    const { runId } = await runWithCallback(gateway, session.id, content, receiver.url);

    step('webhooks: wait for the callback');
    await waitFor('the callback', () => receiver.received.length >= 1, { timeoutMs: 10000 });
    const got = receiver.received[0];
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/hook');
    assert.match(got.headers['content-type'], /^application\/json/);
    assert.match(got.headers['webhook-id'], /^msg_/);
    assert.match(got.headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);

    step('webhooks: verify with the reference library');
    const wh = new Webhook(secret);
    const payload = wh.verify(got.body, signatureHeaders(got.headers));
    assert.equal(payload.session_id, session.id);
    assert.equal(payload.run_id, runId);
    assert.equal(payload.status, 'done');
    assert.equal(payload.output, content);
    // The raw body as a string verifies too (what most frameworks hand over).
    wh.verify(got.body.toString('utf8'), got.headers);

    step('webhooks: tampering is detected');
    const tampered = Buffer.from(got.body.toString('utf8').replace('"done"', '"DONE"'));
    assert.notDeepEqual(tampered, got.body);
    assert.throws(() => wh.verify(tampered, signatureHeaders(got.headers)), WebhookVerificationError);
    assert.throws(() => wh.verify(Buffer.concat([got.body, Buffer.from(' ')]), signatureHeaders(got.headers)), WebhookVerificationError);
    assert.throws(() => wh.verify(got.body, { ...signatureHeaders(got.headers), 'webhook-id': 'msg_forged' }), WebhookVerificationError);
    assert.throws(() => wh.verify(got.body, {
      ...signatureHeaders(got.headers),
      'webhook-timestamp': String(Number(got.headers['webhook-timestamp']) + 1),
    }), WebhookVerificationError);
    const otherSecret = new Webhook(`whsec_${randomBytes(32).toString('base64')}`);
    assert.throws(() => otherSecret.verify(got.body, signatureHeaders(got.headers)), WebhookVerificationError);

    const list = await api(gateway.url, 'GET', `/sessions/${session.id}/webhooks`);
    assert.equal(list.deliveries.length, 1);
    assert.equal(list.deliveries[0].webhook_id, got.headers['webhook-id']);
    await waitFor('delivered', async () => {
      const l = await api(gateway.url, 'GET', `/sessions/${session.id}/webhooks`);
      return l.deliveries[0].status === 'delivered';
    }, { timeoutMs: 10000 });
    assert.equal(receiver.received.length, 1);
  } catch (err) {
    if (gateway) console.error('gateway log:\n' + gateway.log());
    console.error('steps:\n' + stepsSoFar());
    throw err;
  } finally {
    await r.releaseAll();
  }
});

test('standardwebhooks: without a secret the callback carries no signature, which the library refuses', { timeout: 30000 }, async () => {
  const r = resources();
  let gateway;
  try {
    const receiver = r.add(await startReceiver(), (x) => x.close(), 'the receiver');
    gateway = r.add(await startGateway({ GATEWAY_WEBHOOK_ALLOW_PRIVATE: '1' }), (g) => g.stop(), 'the gateway');
    const session = await api(gateway.url, 'POST', '/sessions', {});
    await runWithCallback(gateway, session.id, 'unsigned', receiver.url);
    await waitFor('the callback', () => receiver.received.length >= 1, { timeoutMs: 10000 });
    const got = receiver.received[0];
    assert.match(got.headers['webhook-id'], /^msg_/);
    assert.match(got.headers['webhook-timestamp'], /^\d+$/);
    assert.equal(got.headers['webhook-signature'], undefined);
    const wh = new Webhook(`whsec_${randomBytes(32).toString('base64')}`);
    assert.throws(() => wh.verify(got.body, got.headers), WebhookVerificationError);
  } catch (err) {
    if (gateway) console.error('gateway log:\n' + gateway.log());
    throw err;
  } finally {
    await r.releaseAll();
  }
});

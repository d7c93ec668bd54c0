// The page at GET / with auth on (GATEWAY_API_KEYS), in Chromium: without a key it
// shows the 401; with the key typed into its field it creates a session, opens its
// EventSource with a stream token (?token=), and when a cut connection comes back
// after the token expired (the browser's own retry gets a 401 and gives up), it
// fetches a new token and resumes: every token exactly once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, mockTokens } from './lib/gateway.mjs';
import { startProxy } from './lib/proxy.mjs';
import { launchChromium, watchPage } from './lib/browser.mjs';
import { exitWhenDone, resources, step, stepsSoFar, watchdog } from './lib/harness.mjs';

watchdog(90000, 'page_auth.test.mjs');
exitWhenDone();

const KEY = 'page-test-key-0123456789abcdef';
const TOKENS = 150;
const RATE = 50;  // a 3 s run: longer than the 1 s token lifetime

async function keyed(base, method, path) {
  const res = await fetch(base + path, { method, headers: { Authorization: `Bearer ${KEY}` }, signal: AbortSignal.timeout(10000) });
  assert.equal(res.status, 200, `${method} ${path}`);
  return res.json();
}

test('page with auth on: API key field, stream token, a new token after expiry', { timeout: 60000 }, async () => {
  const r = resources();
  let gateway;
  try {
    step('page_auth: start the gateway with a key and 1 s stream tokens');
    gateway = r.add(await startGateway({ GATEWAY_API_KEYS: KEY, GATEWAY_STREAM_TOKEN_TTL: '1', GATEWAY_SSE_RETRY_INTERVAL: '200' }),
      (g) => g.stop(), 'the gateway');
    const proxy = r.add(await startProxy(gateway.port), (p) => p.close(), 'the proxy');
    const browser = r.add(await launchChromium(), (b) => b.close(), 'chromium');
    const page = await browser.newContext().then((c) => c.newPage());
    page.setDefaultTimeout(15000);
    const problems = watchPage(page);
    const eventUrls = [];
    page.on('request', (req) => { if (req.url().includes('/events')) eventUrls.push(req.url()); });
    await page.goto(proxy.url + '/');

    step('page_auth: without a key the page shows the 401');
    await page.click('#create');
    await page.waitForFunction(() => /unauthorized/.test(document.getElementById('problem').textContent));
    assert.equal(await page.evaluate(() => window.__gw.sessionId), null);

    step('page_auth: with the key');
    await page.fill('#api-key', KEY);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agw.apiKey')), KEY);
    await page.fill('#config', JSON.stringify({ provider: 'mock', mock: { tokens: TOKENS, tokens_per_second: RATE } }));
    await page.click('#create');
    await page.waitForFunction(() => window.__gw.connection === 'open' && window.__gw.sessionId);
    const sessionId = await page.evaluate(() => window.__gw.sessionId);
    assert.equal(await page.textContent('#problem'), '');
    assert.ok(eventUrls.length >= 1 && eventUrls.every((u) => /[?&]token=[A-Za-z0-9_.-]+/.test(u)), eventUrls.join('\n'));

    step('page_auth: send, then cut once the token has expired');
    await page.fill('#message', 'hello with a key');
    await page.click('#send');
    await page.waitForFunction(() => window.__gw.events.filter((e) => e.type === 'token').length >= 60, null, { polling: 20 });
    assert.ok(proxy.cutAll() >= 1, 'the cut found a live connection');

    await page.waitForFunction(() => window.__gw.done >= 1, null, { timeout: 20000 });
    const gw = await page.evaluate(() => window.__gw);
    assert.ok(gw.streamTokens >= 2, `stream tokens fetched: ${gw.streamTokens}`);
    assert.ok(gw.reconnects >= 1);
    assert.equal(gw.duplicates, 0);
    assert.equal(gw.gaps, 0);
    gw.events.forEach((e, i) => assert.equal(e.id, i + 1, `event #${i} has id ${e.id}`));
    assert.equal(gw.tokens, mockTokens(TOKENS));
    assert.equal(gw.events.at(-1).type, 'done');
    assert.equal(gw.lastPost.status, 200);

    // What the page showed is what the gateway stored, read with the key.
    const messages = await keyed(gateway.url, 'GET', `/sessions/${sessionId}/messages?limit=10`);
    assert.equal(messages.messages[0].content, mockTokens(TOKENS));
    assert.match(await page.textContent('#conn-text'), /connected/);
    assert.deepEqual(problems, []);
    console.log(`page_auth: ${gw.streamTokens} stream tokens, ${gw.reconnects} reconnects, ${gw.events.length} events`);
  } catch (err) {
    if (gateway) console.error('gateway log:\n' + gateway.log());
    console.error('steps:\n' + stepsSoFar());
    throw err;
  } finally {
    await r.releaseAll();
  }
});

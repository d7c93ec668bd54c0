// The `eventsource` package (v4, the WhatWG EventSource for Node) follows
// GET /sessions/{id}/events through a proxy that cuts it twice mid-run; it
// reconnects with Last-Event-ID by itself and gets every event once, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventSource } from 'eventsource';
import { startGateway, api, mockTokens, messagesOldestFirst, waitFor } from './lib/gateway.mjs';
import { startProxy } from './lib/proxy.mjs';
import { exitWhenDone, resources, step, stepsSoFar, watchdog } from './lib/harness.mjs';

watchdog(60000, 'eventsource.test.mjs');
exitWhenDone();

const TOKENS = 300;
const RATE = 100;
const TYPES = ['status', 'token', 'tool_call', 'tool_result', 'planning', 'step_complete', 'delegation', 'usage', 'error', 'done'];

test('eventsource@4: GET /events followed through two cuts, complete and in order', { timeout: 45000 }, async () => {
  const r = resources();
  let gateway;
  try {
    step('eventsource: start the gateway and the proxy');
    gateway = r.add(await startGateway({ GATEWAY_SSE_RETRY_INTERVAL: '200' }), (g) => g.stop(), 'the gateway');
    const proxy = r.add(await startProxy(gateway.port), (p) => p.close(), 'the proxy');
    const session = await api(gateway.url, 'POST', '/sessions', {
      config: { provider: 'mock', mock: { tokens: TOKENS, tokens_per_second: RATE, tool_calls: [{ name: 'calculator', args: { expression: '2+3*4' } }] } },
    });
    const events = [];
    const notices = [];
    const sentCursors = [];  // the Last-Event-ID of every (re)connection
    let opens = 0;
    let errors = 0;
    const es = r.add(new EventSource(`${proxy.url}/sessions/${session.id}/events?last_event_id=0`, {
      fetch: (url, init) => {
        sentCursors.push(init.headers['Last-Event-ID'] ?? null);
        return fetch(url, init);
      },
    }), (source) => source.close(), 'the EventSource');
    es.onopen = () => { opens++; };
    es.onerror = () => { errors++; };
    const record = (e) => {
      if (typeof e.data !== 'string') return;  // the EventSource's own connection errors
      events.push({ id: Number(e.lastEventId), type: e.type, data: JSON.parse(e.data) });
    };
    for (const t of TYPES) es.addEventListener(t, record);
    es.addEventListener('reconnected', (e) => notices.push(JSON.parse(e.data)));
    await waitFor('the first open', () => opens === 1);

    // The run, started straight on the gateway; its own stream is read to its end.
    const posted = fetch(`${gateway.url}/sessions/${session.id}/messages`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ content: 'follow me' }),
      signal: AbortSignal.timeout(20000),
    }).then(async (res) => ({ status: res.status, body: await res.text() }));

    const tokens = () => events.filter((e) => e.type === 'token').length;
    await waitFor('40 tokens', () => tokens() >= 40, { intervalMs: 5 });
    const firstCut = tokens();
    step(`eventsource: first cut at ${firstCut} tokens`);
    assert.ok(proxy.cutAll() >= 1);
    await waitFor('a reconnect and 60 more tokens', () => opens >= 2 && tokens() >= firstCut + 60, { intervalMs: 5 });
    const secondCut = tokens();
    step(`eventsource: second cut at ${secondCut} tokens`);
    assert.ok(!events.some((e) => e.type === 'done'), `the run should still be live at the second cut (${secondCut} tokens seen)`);
    assert.ok(proxy.cutAll() >= 1);
    await waitFor('done', () => events.some((e) => e.type === 'done'), { timeoutMs: 20000 });
    es.close();

    assert.equal(opens, 3);
    assert.equal(errors, 2);
    assert.deepEqual(sentCursors.slice(0, 1), [null]);
    assert.equal(sentCursors.length, 3);
    // Each reconnect carried the last id seen, and the server announced that same cursor.
    assert.equal(notices.length, 3, `reconnected notices: ${JSON.stringify(notices)}`);
    assert.equal(notices[0].last_event_id, 0);
    for (let i = 1; i < 3; i++) {
      assert.equal(Number(sentCursors[i]), notices[i].last_event_id);
      assert.equal(notices[i].gap, false);
    }
    events.forEach((e, i) => assert.equal(e.id, i + 1, `event #${i} has id ${e.id}`));
    assert.ok(events.some((e) => e.type === 'tool_call' && e.data.name === 'calculator'));
    assert.ok(events.some((e) => e.type === 'tool_result' && e.data.output.includes('14')));
    assert.equal(events.filter((e) => e.type === 'done').length, 1);
    assert.equal(events.at(-1).type, 'done');
    const text = events.filter((e) => e.type === 'token').map((e) => e.data.content).join('');
    assert.equal(text, mockTokens(TOKENS));

    const post = await posted;
    assert.equal(post.status, 200);
    assert.match(post.body, /event: done/);
    const messages = await messagesOldestFirst(gateway.url, session.id);
    assert.equal(messages.at(-1).role, 'assistant');
    assert.equal(messages.at(-1).content, text);
    assert.equal(messages.filter((m) => m.role === 'user').length, 1);
    console.log(`eventsource: cuts at ${firstCut} and ${secondCut} tokens, ${opens} opens, ${events.length} events`);
  } catch (err) {
    if (gateway) console.error('gateway log:\n' + gateway.log());
    console.error('steps:\n' + stepsSoFar());
    throw err;
  } finally {
    await r.releaseAll();
  }
});

// @microsoft/fetch-event-source, in Chromium, POSTs a message and reads the run's
// stream; the proxy cuts the connection twice mid-run and the library re-sends the
// same POST with Last-Event-ID by itself. The server must treat those as resumes:
// one user message stored, every event received once, in order, ending with done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { startGateway, api, mockTokens, messagesOldestFirst } from './lib/gateway.mjs';
import { startProxy } from './lib/proxy.mjs';
import { launchChromium, watchPage } from './lib/browser.mjs';
import { exitWhenDone, resources, step, stepsSoFar, watchdog } from './lib/harness.mjs';

watchdog(100000, 'fetch_event_source.test.mjs');
exitWhenDone();

const TOKENS = 300;
const RATE = 100;
const CONTENT = 'stream me 300 tokens, once';

// The library's own ESM build, served to the page under the proxy's origin by
// Playwright (page.route) so that its fetch() calls are same-origin.
const require = createRequire(import.meta.url);
const fesDir = join(dirname(require.resolve('@microsoft/fetch-event-source/package.json')), 'lib', 'esm');
const HARNESS = `<!DOCTYPE html><meta charset="utf-8"><title>fes</title>
<script type="module">
  import { fetchEventSource } from '/__test__/fes/index.js';
  window.fetchEventSource = fetchEventSource;
</script>`;

async function serveHarness(route) {
  const url = new URL(route.request().url());
  if (url.pathname === '/__test__/fes.html') return route.fulfill({ status: 200, contentType: 'text/html', body: HARNESS });
  const name = url.pathname.slice('/__test__/fes/'.length).replace(/\.js$/, '');
  if (!/^[a-z]+$/.test(name)) return route.fulfill({ status: 404, body: '' });
  const body = await readFile(join(fesDir, name + '.js'), 'utf8');  // its imports say './parse', no extension
  return route.fulfill({ status: 200, contentType: 'text/javascript', body });
}

test('fetch-event-source: a POST cut twice mid-run resumes without a second message', { timeout: 75000 }, async () => {
  const r = resources();
  let gateway;
  try {
    step('fes: start the gateway and the proxy');
    gateway = r.add(await startGateway({ GATEWAY_SSE_RETRY_INTERVAL: '200' }), (g) => g.stop(), 'the gateway');
    const proxy = r.add(await startProxy(gateway.port), (p) => p.close(), 'the proxy');
    step('fes: launch chromium');
    const browser = r.add(await launchChromium(), (b) => b.close(), 'chromium');
    const session = await api(gateway.url, 'POST', '/sessions', {
      title: 'fetch-event-source', config: { provider: 'mock', mock: { tokens: TOKENS, tokens_per_second: RATE } },
    });
    const page = await browser.newContext().then((c) => c.newPage());
    page.setDefaultTimeout(15000);
    const problems = watchPage(page);
    await page.route('**/__test__/**', serveHarness);
    const posts = [];  // the header sets of every POST the library sent
    page.on('request', (req) => {
      if (req.method() === 'POST' && req.url().endsWith('/messages')) posts.push(req.allHeaders());
    });
    step('fes: open the harness');
    await page.goto(proxy.url + '/__test__/fes.html');
    await page.waitForFunction(() => typeof window.fetchEventSource === 'function');

    await page.evaluate(({ sessionId, content }) => {
      const fes = window.__fes = { events: [], opens: [], errors: [], closed: 0, finished: null };
      window.fetchEventSource(`/sessions/${sessionId}/messages`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ content }),
        openWhenHidden: true,
        async onopen(res) {
          fes.opens.push({ status: res.status, type: res.headers.get('content-type'), runId: res.headers.get('x-run-id') });
          if (!res.ok || !(res.headers.get('content-type') || '').startsWith('text/event-stream')) throw new Error(`bad answer ${res.status}`);
        },
        onmessage(ev) { fes.events.push({ id: ev.id, event: ev.event, data: ev.data }); },
        onclose() { fes.closed++; },
        onerror(err) { fes.errors.push(String(err)); },  // undefined: retry after the server's retry: interval
      }).then(() => { fes.finished = 'resolved'; }, (err) => { fes.finished = 'rejected: ' + err; });
    }, { sessionId: session.id, content: CONTENT });

    const tokenCount = () => page.evaluate(() => window.__fes.events.filter((e) => e.event === 'token').length);
    await page.waitForFunction(() => window.__fes.events.filter((e) => e.event === 'token').length >= 40, null, { polling: 20 });
    const firstCut = await tokenCount();
    step(`fes: first cut at ${firstCut} tokens`);
    assert.ok(proxy.cutAll() >= 1, 'the first cut found a live connection');
    await page.waitForFunction((n) => window.__fes.opens.length >= 2 && window.__fes.events.filter((e) => e.event === 'token').length >= n + 60,
      firstCut, { polling: 20 });
    const secondCut = await tokenCount();
    assert.equal(await page.evaluate(() => window.__fes.events.some((e) => e.event === 'done')), false,
      `the run should still be live at the second cut (${secondCut} tokens seen)`);
    step(`fes: second cut at ${secondCut} tokens`);
    assert.ok(proxy.cutAll() >= 1, 'the second cut found a live connection');
    await page.waitForFunction(() => window.__fes.finished !== null, null, { timeout: 20000 });
    const fes = await page.evaluate(() => window.__fes);
    step('fes: finished');

    assert.equal(fes.finished, 'resolved');
    assert.equal(fes.closed, 1, 'the stream ended once, cleanly, after done');
    assert.equal(fes.errors.length, 2, `errors: ${JSON.stringify(fes.errors)}`);
    assert.equal(fes.opens.length, 3);
    for (const o of fes.opens) {
      assert.equal(o.status, 200);
      assert.match(o.type, /^text\/event-stream/);
    }
    // The library re-sent the same POST, with Last-Event-ID, by itself.
    const sent = await Promise.all(posts);
    assert.equal(sent.length, 3);
    assert.equal(sent[0]['last-event-id'], undefined);
    const numbered = fes.events.filter((e) => e.id !== '');
    const notices = fes.events.filter((e) => e.event === 'reconnected');
    assert.equal(notices.length, 2);
    for (let i = 1; i < 3; i++) {
      const cursor = Number(sent[i]['last-event-id']);
      assert.ok(cursor > 0, `resume ${i} carried Last-Event-ID ${sent[i]['last-event-id']}`);
      const notice = JSON.parse(notices[i - 1].data);
      assert.equal(notice.last_event_id, cursor);
      assert.equal(notice.gap, false);
    }

    // The union of what arrived: every event once, in order, ending with one done.
    numbered.forEach((e, i) => assert.equal(Number(e.id), i + 1, `event #${i} has id ${e.id}`));
    assert.equal(numbered.filter((e) => e.event === 'done').length, 1);
    assert.equal(numbered.at(-1).event, 'done');
    const tokens = numbered.filter((e) => e.event === 'token').map((e) => JSON.parse(e.data).content).join('');
    assert.equal(tokens, mockTokens(TOKENS));
    assert.equal(fes.events.filter((e) => e.data === '').length, 0, 'no empty messages (lone retry/heartbeat blocks)');

    // Exactly one user message was stored, whatever the retries carried.
    const after = await api(gateway.url, 'GET', `/sessions/${session.id}`);
    assert.equal(after.message_count, 2);
    assert.equal(after.run, null);
    const messages = await messagesOldestFirst(gateway.url, session.id);
    assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
    assert.equal(messages[0].content, CONTENT);
    assert.equal(messages[1].content, tokens);
    assert.equal(messages[1].status, 'complete');
    assert.deepEqual(problems, []);
    console.log(`fetch-event-source: cuts at ${firstCut} and ${secondCut} tokens, ${fes.opens.length} POSTs, ${numbered.length} events`);
  } catch (err) {
    if (gateway) console.error('gateway log:\n' + gateway.log());
    console.error('steps:\n' + stepsSoFar());
    throw err;
  } finally {
    await r.releaseAll();
  }
});

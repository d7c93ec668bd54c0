// The page at GET /, in Chromium, through a proxy that cuts every connection
// twice mid-run: the browser's own EventSource reconnects with Last-Event-ID and
// the page ends with every token exactly once, in order, as persisted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, api, mockTokens, messagesOldestFirst } from './lib/gateway.mjs';
import { startProxy } from './lib/proxy.mjs';
import { launchChromium, watchPage } from './lib/browser.mjs';
import { exitWhenDone, resources, step, stepsSoFar, watchdog } from './lib/harness.mjs';

watchdog(120000, 'page.test.mjs');
exitWhenDone();

const TOKENS = 300;
const RATE = 100;  // tokens per second: a 3 s run

test('page: tokens exactly once through two connection cuts', { timeout: 75000 }, async () => {
  const r = resources();
  let gateway;
  try {
    step('page: start the gateway and the proxy');
    gateway = r.add(await startGateway({ GATEWAY_SSE_RETRY_INTERVAL: '200' }), (g) => g.stop(), 'the gateway');
    const proxy = r.add(await startProxy(gateway.port), (p) => p.close(), 'the proxy');
    step('page: launch chromium');
    const browser = r.add(await launchChromium(), (b) => b.close(), 'chromium');
    const page = await browser.newContext().then((c) => c.newPage());
    page.setDefaultTimeout(15000);
    const problems = watchPage(page);

    step('page: open the page');
    const response = await page.goto(proxy.url + '/');
    assert.equal(response.status(), 200);
    const headers = response.headers();
    assert.equal(headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(headers['cache-control'], 'no-cache');
    assert.equal(headers['x-content-type-options'], 'nosniff');
    const csp = headers['content-security-policy'];
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /connect-src 'self'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/]+=*'/);
    assert.equal(await page.title(), 'agent-gateway');

    // A session with a paced mock run, created from the page's own form.
    await page.fill('#config', JSON.stringify({ provider: 'mock', mock: { tokens: TOKENS, tokens_per_second: RATE } }));
    await page.click('#create');
    await page.waitForFunction(() => window.__gw.connection === 'open' && window.__gw.sessionId);
    const sessionId = await page.evaluate(() => window.__gw.sessionId);
    assert.match(await page.textContent('#conn-text'), /connected/);

    step('page: session created, sending the message');
    await page.fill('#message', 'hello <b>through</b> a proxy & back');
    await page.click('#send');

    // Cut 1 after some tokens; cut 2 once the resumed stream has brought more.
    const tokensSeen = () => page.evaluate(() => window.__gw.events.filter((e) => e.type === 'token').length);
    await page.waitForFunction(() => window.__gw.events.filter((e) => e.type === 'token').length >= 40, null, { polling: 20 });
    const firstCut = await tokensSeen();
    step(`page: first cut at ${firstCut} tokens`);
    assert.ok(proxy.cutAll() >= 1, 'the first cut found a live connection');
    await page.waitForFunction((n) => window.__gw.reconnects >= 1 && window.__gw.events.filter((e) => e.type === 'token').length >= n + 60,
      firstCut, { polling: 20 });
    const secondCut = await tokensSeen();
    const doneBeforeSecondCut = await page.evaluate(() => window.__gw.done);
    assert.equal(doneBeforeSecondCut, 0, `the run should still be live at the second cut (${secondCut} tokens seen)`);
    step(`page: second cut at ${secondCut} tokens`);
    assert.ok(proxy.cutAll() >= 1, 'the second cut found a live connection');

    await page.waitForFunction(() => window.__gw.done >= 1, null, { timeout: 20000 });
    await page.waitForSelector('#log li.done');
    const gw = await page.evaluate(() => window.__gw);
    step('page: done shown');

    // Exactly once, in order: ids 1..N with no duplicate and no gap, one done, last.
    assert.equal(gw.duplicates, 0, 'the server sent an event id twice');
    assert.equal(gw.gaps, 0, 'event ids skipped');
    assert.ok(gw.reconnects >= 2, `EventSource reconnected ${gw.reconnects} times`);
    gw.events.forEach((e, i) => assert.equal(e.id, i + 1, `event #${i} has id ${e.id}`));
    assert.equal(gw.events.filter((e) => e.type === 'done').length, 1);
    assert.equal(gw.events.at(-1).type, 'done');
    assert.equal(gw.events.filter((e) => e.type === 'token').length, TOKENS);
    // Each resume announced itself with the id the browser had seen last.
    const resumes = gw.reconnected.filter((r) => r.last_event_id > 0);
    assert.ok(resumes.length >= 2, `reconnected notices: ${JSON.stringify(gw.reconnected)}`);
    for (const r of resumes) assert.equal(r.gap, false);

    // What the page shows is what was persisted.
    const expected = mockTokens(TOKENS);
    assert.equal(gw.tokens, expected);
    assert.equal((await page.textContent('#answer')).trimEnd(), expected);
    const messages = await messagesOldestFirst(gateway.url, sessionId);
    assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
    assert.equal(messages[0].content, 'hello <b>through</b> a proxy & back');
    assert.equal(messages[1].content, expected);
    assert.equal(messages[1].status, 'complete');
    const done = gw.events.at(-1).data.assistant_data;
    assert.equal(done.content, expected);
    assert.equal(done.id, messages[1].id);
    const session = await api(gateway.url, 'GET', `/sessions/${sessionId}`);
    assert.equal(session.message_count, 2);
    assert.equal(session.last_event_id, gw.events.at(-1).id);

    // The page escaped the user's text rather than parsing it.
    assert.equal(await page.locator('#answer b').count(), 0);
    assert.match(await page.textContent('#conn-text'), /connected/);
    assert.deepEqual(problems, []);
    console.log(`page: cuts at ${firstCut} and ${secondCut} tokens, ${gw.reconnects} reconnects, ${gw.events.length} events, proxy accepted ${proxy.accepted} connections`);
  } catch (err) {
    if (gateway) console.error('gateway log:\n' + gateway.log());
    console.error('steps:\n' + stepsSoFar());
    throw err;
  } finally {
    await r.releaseAll();
  }
});

test('page: tool calls, an error and done are shown; streamed text is never parsed as HTML', { timeout: 60000 }, async () => {
  const r = resources();
  let gateway;
  try {
    gateway = r.add(await startGateway(), (g) => g.stop(), 'the gateway');
    const browser = r.add(await launchChromium(), (b) => b.close(), 'chromium');
    const page = await browser.newContext().then((c) => c.newPage());
    page.setDefaultTimeout(15000);
    const problems = watchPage(page);
    await page.goto(gateway.url + '/');
    // The default mock echoes the message word by word: these tokens are markup.
    const config = { mock: { tool_calls: [{ name: 'calculator', args: { expression: '2+3*4' } }], fail_after: 4 } };
    await page.fill('#config', JSON.stringify(config));
    await page.click('#create');
    await page.waitForFunction(() => window.__gw.connection === 'open');
    await page.fill('#message', '<img src=x onerror="window.__pwned=1"> <b>bold</b> & more words');
    await page.click('#send');
    await page.waitForSelector('#log li.done');
    const gw = await page.evaluate(() => window.__gw);
    assert.deepEqual(gw.events.map((e) => e.type).filter((t) => t !== 'status'),
      ['tool_call', 'tool_result', 'token', 'token', 'token', 'token', 'error', 'usage', 'done']);
    assert.match(await page.textContent('#log li.tool_call'), /calculator \{"expression":"2\+3\*4"\}/);
    assert.match(await page.textContent('#log li.tool_result'), /exit 0: 14/);
    assert.match(await page.textContent('#log li.error'), /mock_failure/);
    assert.match(await page.textContent('#log li.done'), /assistant message error/);
    const streamed = '<img src=x onerror="window.__pwned=1"> <b>bold</b>';
    assert.equal(gw.tokens, streamed);
    assert.equal((await page.textContent('#answer')).trimEnd(), streamed);
    assert.equal(await page.locator('#answer img, #answer b, #log img').count(), 0);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(gw.connection, 'open', 'a server error event is not a connection error');
    assert.equal(gw.duplicates, 0);
    assert.deepEqual(problems, []);
  } catch (err) {
    if (gateway) console.error('gateway log:\n' + gateway.log());
    throw err;
  } finally {
    await r.releaseAll();
  }
});

test('page: GET / headers, HEAD /, and 405 for other methods', { timeout: 20000 }, async () => {
  const r = resources();
  try {
    const gateway = r.add(await startGateway(), (g) => g.stop(), 'the gateway');
    const get = await fetch(gateway.url + '/');
    const body = await get.text();
    assert.equal(get.status, 200);
    assert.equal(get.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(body, /^<!DOCTYPE html>/);
    assert.doesNotMatch(body, /<script[^>]+src=|<link[^>]+href="?http|@import/i, 'the page loads nothing external');
    const head = await fetch(gateway.url + '/', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(body)));
    assert.equal(head.headers.get('content-security-policy'), get.headers.get('content-security-policy'));
    assert.equal(await head.text(), '');
    const post = await fetch(gateway.url + '/', { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal((await post.json()).error.code, 'method_not_allowed');
  } finally {
    await r.releaseAll();
  }
});

// The page at GET /, in Chromium, showing an OpenAI-compatible model's reasoning
// (the fake upstream's `reasoning` scenario: both field spellings, then two
// tokens): one growing reasoning line in the log, kept out of the answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, messagesOldestFirst } from './lib/gateway.mjs';
import { startFakeUpstream } from './lib/fake_upstream.mjs';
import { launchChromium, watchPage } from './lib/browser.mjs';
import { exitWhenDone, resources, step, watchdog } from './lib/harness.mjs';

watchdog(60000, 'page_reasoning.test.mjs');
exitWhenDone();

test('page: reasoning deltas grow one reasoning line, and the answer holds only the tokens', { timeout: 45000 }, async () => {
  const r = resources();
  try {
    step('page_reasoning: start the fake upstream and the gateway');
    const fake = r.add(await startFakeUpstream(), (f) => f.stop(), 'the fake upstream');
    const gateway = r.add(await startGateway({ GATEWAY_OPENAI_BASE_URL: fake.baseURL, GATEWAY_OPENAI_API_KEY: 'sk-page' }),
      (g) => g.stop(), 'the gateway');
    const browser = r.add(await launchChromium(), (b) => b.close(), 'chromium');
    const page = await browser.newContext().then((c) => c.newPage());
    page.setDefaultTimeout(15000);
    const problems = watchPage(page);

    step('page_reasoning: a session on the openai provider, from the page');
    await page.goto(gateway.url + '/');
    await page.fill('#config', JSON.stringify({ provider: 'openai', model: 'reasoning' }));
    await page.click('#create');
    await page.waitForFunction(() => window.__gw.connection === 'open' && window.__gw.sessionId);
    const sessionId = await page.evaluate(() => window.__gw.sessionId);
    await page.fill('#message', 'think');
    await page.click('#send');
    await page.waitForFunction(() => window.__gw.done >= 1, null, { timeout: 20000 });

    step('page_reasoning: what the page shows');
    const lines = await page.$$eval('#log li.reasoning', (lis) => lis.map((li) => li.textContent));
    assert.deepEqual(lines, ['reasoning Let me think about it.'], 'one reasoning line, grown by both deltas');
    const gw = await page.evaluate(() => window.__gw);
    assert.equal(gw.reasoning, 'Let me think about it.');
    assert.equal(gw.tokens, 'tok0 tok1');
    const messages = await messagesOldestFirst(gateway.url, sessionId);
    assert.equal(messages.at(-1).content, 'tok0 tok1', 'reasoning is not persisted in the answer');
    assert.deepEqual(problems, [], 'no page errors');
  } finally {
    await r.releaseAll();
  }
});

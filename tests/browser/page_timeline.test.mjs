// The page at GET / shows the session timeline (docs/timeline.md): each event's
// source, custom events, and manual mode, where a customer's message is held for
// an operator whose answer streams in like the agent's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, api, messagesOldestFirst } from './lib/gateway.mjs';
import { launchChromium, watchPage } from './lib/browser.mjs';
import { exitWhenDone, resources, step, stepsSoFar, watchdog } from './lib/harness.mjs';

watchdog(90000, 'page_timeline.test.mjs');
exitWhenDone();

test('page: sources, custom events and manual mode with an operator', { timeout: 60000 }, async () => {
  const r = resources();
  let gateway;
  try {
    step('page_timeline: start the gateway and chromium');
    gateway = r.add(await startGateway(), (g) => g.stop(), 'the gateway');
    const browser = r.add(await launchChromium(), (b) => b.close(), 'chromium');
    const page = await browser.newContext().then((c) => c.newPage());
    page.setDefaultTimeout(15000);
    const problems = watchPage(page);
    await page.goto(gateway.url + '/');

    step('page_timeline: an agent run, its events marked ai_agent');
    await page.fill('#config', JSON.stringify({ provider: 'mock', mock: { tokens: 5 } }));
    await page.click('#create');
    await page.waitForFunction(() => window.__gw.connection === 'open' && window.__gw.sessionId);
    const sessionId = await page.evaluate(() => window.__gw.sessionId);
    assert.equal(await page.textContent('#mode-badge'), 'auto');
    await page.fill('#message', 'hello agent');
    await page.click('#send');
    await page.waitForFunction(() => window.__gw.done >= 1);
    assert.equal(await page.textContent('#st-source'), 'ai_agent');
    assert.ok(await page.locator('#log li.done[data-source="ai_agent"]').count() === 1);

    step('page_timeline: a custom event');
    await page.click('#custom-send');
    await page.waitForFunction(() => window.__gw.customs.length >= 1);
    const custom = await page.evaluate(() => window.__gw.customs[0]);
    assert.equal(custom.source, 'customer_ui');
    assert.equal(custom.data.action, 'clicked');
    await page.waitForSelector('#log li.custom[data-source="customer_ui"]');

    step('page_timeline: manual mode holds the message; the operator answers');
    await page.check('#manual');
    await page.waitForFunction(() => window.__gw.mode === 'manual');
    assert.equal((await api(gateway.url, 'GET', `/sessions/${sessionId}`)).mode, 'manual');
    assert.equal(await page.textContent('#mode-badge'), 'manual');
    await page.fill('#message', 'can a human help?');
    await page.click('#send');
    await page.waitForFunction(() => window.__gw.messages.length >= 1);
    // The held message's event (the stream's connection) and the POST's answer (its own
    // connection, maybe served by another io thread) reach the page in either order.
    await page.waitForFunction(() => window.__gw.lastPost && window.__gw.lastPost.held !== null);
    assert.equal(await page.evaluate(() => window.__gw.lastPost.held), 'stored');
    const held = await page.evaluate(() => window.__gw.messages[0]);
    assert.equal(held.source, 'customer');
    assert.equal(held.message.content, 'can a human help?');
    await page.fill('#operator', 'Yes, Ana here.');
    await page.click('#operator-send');
    await page.waitForFunction(() => window.__gw.done >= 2);
    await page.waitForSelector('#log li.done[data-source="human_agent"]');
    assert.match(await page.textContent('#answer'), /Yes, Ana here\./);
    assert.equal(await page.textContent('#st-source'), 'human_agent');

    const messages = await messagesOldestFirst(gateway.url, sessionId);
    assert.deepEqual(messages.map((m) => m.source), ['customer', 'ai_agent', 'customer', 'human_agent']);
    const gw = await page.evaluate(() => window.__gw);
    assert.equal(gw.duplicates, 0);
    assert.equal(gw.gaps, 0);
    assert.deepEqual(problems, []);
  } catch (err) {
    if (gateway) console.error('gateway log:\n' + gateway.log());
    console.error('steps:\n' + stepsSoFar());
    throw err;
  } finally {
    await r.releaseAll();
  }
});

// Issue 15's multi-node checks, end to end: scripts/cluster.sh up 3 starts PostgreSQL,
// Redis, three gateway nodes and nginx on loopback; the tests talk HTTP to the load
// balancer and to the nodes directly, and stop (kill -9) a node or Redis by the PID
// the cluster wrote down. Run by ctest as `cluster` (node --test); the gateway binary
// is AGENT_GATEWAY_BINARY.
//
// Order matters: the test that kills a node runs last.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, chmodSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The Node packages tests/browser installs (scripts/setup.sh): eventsource@4.
const browserRequire = createRequire(new URL('../browser/package.json', import.meta.url));
const { EventSource } = await import(browserRequire.resolve('eventsource'));

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const binary = process.env.AGENT_GATEWAY_BINARY ?? path.join(root, 'build/agent-gateway');
const LEASE_S = 2;

const watchdog = setTimeout(() => {
  console.error('cluster.test.mjs: watchdog: 240 s passed; stopping the cluster');
  down();
  process.exit(1);
}, 240000);
watchdog.unref();

const base = mkdtempSync(path.join(tmpdir(), 'agw-cluster-test-'));
chmodSync(base, 0o755);  // the servers run as their own users
const clusterDir = path.join(base, 'cluster');
const clusterEnv = {
  ...process.env,
  AGW_CLUSTER_DIR: clusterDir,
  AGW_GATEWAY_BINARY: binary,
  GATEWAY_RUN_LEASE: String(LEASE_S),
  GATEWAY_WEBHOOK_ALLOW_PRIVATE: '1',
  GATEWAY_WEBHOOK_RETRY_SCHEDULE: '1,1,1',
  GATEWAY_WEBHOOK_TIMEOUT: '5',
};

let cluster;  // { lb, nodes: [url], redisUrl }

function down() {
  try {
    execFileSync(path.join(root, 'scripts/cluster.sh'), ['down'], { env: clusterEnv, stdio: 'ignore', timeout: 60000 });
  } catch { /* reported by the tests themselves */ }
}

before(async () => {
  const out = execFileSync(path.join(root, 'scripts/cluster.sh'), ['up', '3'], { env: clusterEnv, encoding: 'utf8', timeout: 120000 });
  const lines = out.trim().split('\n');
  const nodes = [...out.matchAll(/^node \d+: (http\S+)/gm)].map((m) => m[1]);
  const redisUrl = out.match(/^redis: (\S+)/m)[1];
  cluster = { lb: lines[lines.length - 1], nodes, redisUrl };
  assert.equal(nodes.length, 3, out);
});

after(() => {
  down();
  rmSync(base, { recursive: true, force: true });
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what, predicate, { timeoutMs = 15000, intervalMs = 20 } = {}) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await predicate()) return;
    await sleep(intervalMs);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function api(url, method, route, body, headers = {}) {
  const res = await fetch(url + route, {
    method,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function newSession(mock, extra = {}) {
  const created = await api(cluster.lb, 'POST', '/sessions', { config: { provider: 'mock', mock }, ...extra });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id;
}

// The SSE frames of a text/event-stream body, as they arrive: {id, event, data}.
async function* sseFrames(res) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame = {};
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) frame.id = Number(line.slice(4));
        else if (line.startsWith('event: ')) frame.event = line.slice(7);
        else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
      }
      if (frame.event) yield frame;
    }
  }
}

// Follows GET /sessions/{id}/events on `node` after `lastId`: collects frames with ids
// into `into` until `stop(frame)` says so (or the stream ends); returns why it stopped.
async function follow(node, sessionId, lastId, into, stop, timeoutMs = 30000) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const res = await fetch(`${node}/sessions/${sessionId}/events`, {
      headers: { 'Last-Event-ID': String(lastId) },
      signal: controller.signal,
    });
    assert.equal(res.status, 200);
    for await (const frame of sseFrames(res)) {
      if (frame.id === undefined) continue;  // reconnected
      into.push(frame);
      if (stop(frame)) return 'stopped';
    }
    return 'ended';
  } catch (e) {
    if (controller.signal.aborted) return 'timeout';
    throw e;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

function assertConsecutive(frames, first, what) {
  const ids = frames.map((f) => f.id);
  const expected = Array.from({ length: ids.length }, (_, i) => first + i);
  assert.deepEqual(ids, expected, `${what}: ids not consecutive from ${first}`);
}

async function metric(node, name) {
  const text = await (await fetch(`${node}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

function startRun(node, sessionId, content, headers = {}) {
  return fetch(`${node}/sessions/${sessionId}/messages`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ content }),
    signal: AbortSignal.timeout(60000),
  });
}

test('a run through node A is followed by an EventSource on node B and resumed with Last-Event-ID on node C', { timeout: 60000 }, async () => {
  const [a, b, c] = cluster.nodes;
  const sessionId = await newSession({ tokens: 200, tokens_per_second: 100 });
  const seen = [];
  let opens = 0;
  const record = (e) => seen.push({ id: Number(e.lastEventId), event: e.type });
  const types = ['status', 'token', 'usage', 'error', 'done'];
  const onB = new EventSource(`${b}/sessions/${sessionId}/events?last_event_id=0`);
  onB.onopen = () => { opens++; };
  for (const t of types) onB.addEventListener(t, record);
  await waitFor('the EventSource on B to open', () => opens === 1);

  const res = await startRun(a, sessionId, 'across nodes');
  assert.equal(res.status, 200);
  const ownStream = [];
  const reading = (async () => { for await (const f of sseFrames(res)) ownStream.push(f); })();

  await waitFor('40 events on B', () => seen.length >= 40, { intervalMs: 5 });
  onB.close();
  const cut = seen[seen.length - 1].id;
  assert.ok(!seen.some((e) => e.event === 'done'), 'the run should still be live when B is left');

  // The rest from node C, with the header an EventSource sends when it reconnects.
  let onC;
  const resumed = [];
  await new Promise((resolve, reject) => {
    onC = new EventSource(`${c}/sessions/${sessionId}/events`, {
      fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, 'Last-Event-ID': String(cut) } }),
    });
    const take = (e) => {
      resumed.push({ id: Number(e.lastEventId), event: e.type });
      if (e.type === 'done') resolve();
    };
    for (const t of types) onC.addEventListener(t, take);
    setTimeout(() => reject(new Error('no done on C within 30 s')), 30000).unref();
  });
  onC.close();
  await reading;

  const whole = [...seen, ...resumed];
  assertConsecutive(whole, 1, 'B then C');
  assert.equal(whole[whole.length - 1].event, 'done');
  // The same events the POST's own stream carried, with the same ids.
  assert.deepEqual(whole.map((f) => [f.id, f.event]), ownStream.filter((f) => f.id).map((f) => [f.id, f.event]));
});

test('200 reconnect cycles spread over the three nodes get every event exactly once', { timeout: 90000 }, async () => {
  const sessionId = await newSession({ tokens: 2500, tokens_per_second: 400 });
  const res = await startRun(cluster.lb, sessionId, 'reconnect a lot');
  assert.equal(res.status, 200);
  const draining = (async () => { for await (const _ of sseFrames(res)); })();
  const got = [];
  let cycles = 0;
  let last = 0;
  while (!got.some((f) => f.event === 'done')) {
    const node = cluster.nodes[cycles % 3];
    const before = got.length;
    // A few events each (more once 200 cycles are done), then the connection is dropped.
    const want = cycles < 200 ? 8 : Infinity;
    await follow(node, sessionId, last, got, (f) => f.event === 'done' || got.length - before >= want, 20000);
    if (got.length) last = got[got.length - 1].id;
    cycles++;
    assert.ok(cycles < 400, 'too many cycles');
  }
  await draining;
  assert.ok(cycles >= 200, `only ${cycles} cycles before the run ended`);
  assertConsecutive(got, 1, `${cycles} cycles`);
});

test('two POSTs racing on two nodes: one run, one 409, every time', { timeout: 60000 }, async () => {
  const [a, b] = cluster.nodes;
  for (let round = 0; round < 10; round++) {
    const sessionId = await newSession({ tokens: 20, tokens_per_second: 100 });
    const answers = await Promise.all([startRun(a, sessionId, 'from a'), startRun(b, sessionId, 'from b')]);
    const statuses = answers.map((r) => r.status).sort();
    const bodies = await Promise.all(answers.map((r) => r.text()));
    assert.deepEqual(statuses, [200, 409], `round ${round}: ${statuses} ${bodies.map((t) => t.slice(0, 120))}`);
    const conflict = JSON.parse(bodies[answers.findIndex((r) => r.status === 409)]);
    assert.equal(conflict.error.code, 'run_in_progress');
    // Exactly one user message stored, and one assistant answer.
    const messages = await api(cluster.lb, 'GET', `/sessions/${sessionId}/messages`);
    assert.equal(messages.body.messages.filter((m) => m.role === 'user').length, 1, JSON.stringify(messages.body));
  }
});

test('a message answering done at once on another node is never a 409', { timeout: 60000 }, async () => {
  // The run's lease is free from its done's commit on (run_ended), not from its release.
  const sessionId = await newSession({ tokens: 3 });
  for (let round = 0; round < 20; round++) {
    const node = cluster.nodes[round % 2];
    const res = await startRun(node, sessionId, `round ${round}`);
    const body = await res.text();
    assert.equal(res.status, 200, `round ${round} on ${node}: ${body.slice(0, 200)}`);
    assert.match(body, /event: done/);
  }
});

test('the same Idempotency-Key on two nodes gives one run', { timeout: 30000 }, async () => {
  const [a, b] = cluster.nodes;
  const sessionId = await newSession({ tokens: 30, tokens_per_second: 100 });
  const key = { 'Idempotency-Key': `k-${Date.now()}` };
  const answers = await Promise.all([startRun(a, sessionId, 'once', key), startRun(b, sessionId, 'once', key)]);
  const texts = await Promise.all(answers.map((r) => r.text()));
  const runIds = new Set(texts.flatMap((t) => [...t.matchAll(/"run_id":"([^"]+)"/g)].map((m) => m[1])));
  assert.equal(runIds.size, 1, `runs: ${[...runIds]} statuses ${answers.map((r) => r.status)}`);
  const messages = await api(cluster.lb, 'GET', `/sessions/${sessionId}/messages`);
  assert.equal(messages.body.messages.filter((m) => m.role === 'user').length, 1);
});

test('webhooks: each attempt is made by exactly one node', { timeout: 90000 }, async () => {
  // A receiver that fails every delivery's first attempt, so each is retried once.
  const received = new Map();  // webhook-id -> number of requests
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = req.headers['webhook-id'];
      const n = (received.get(id) ?? 0) + 1;
      received.set(id, n);
      res.writeHead(n === 1 ? 500 : 200).end();
    });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const callback = `http://127.0.0.1:${receiver.address().port}/hook`;
  try {
    const sessions = [];
    for (let i = 0; i < 30; i++) sessions.push(await newSession({ tokens: 3 }));
    // Runs through every node; their completions land in the one outbox that all
    // three dispatchers poll.
    await Promise.all(sessions.map(async (id, i) => {
      const res = await fetch(`${cluster.nodes[i % 3]}/sessions/${id}/messages`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ content: 'hook me', callback_url: callback }),
      });
      assert.equal(res.status, 200);
      await res.text();
    }));
    const deliveries = async () => (await Promise.all(sessions.map((id) => api(cluster.lb, 'GET', `/sessions/${id}/webhooks`))))
      .flatMap((r) => r.body.deliveries);
    await waitFor('every delivery delivered', async () => (await deliveries()).every((d) => d.status === 'delivered'), { timeoutMs: 45000, intervalMs: 250 });
    const all = await deliveries();
    assert.equal(all.length, 30);
    for (const d of all) {
      assert.equal(d.attempts.length, 2, `delivery ${d.id}: ${JSON.stringify(d.attempts)}`);
      assert.equal(received.get(d.webhook_id), 2, `delivery ${d.id} reached the receiver ${received.get(d.webhook_id)} times`);
    }
    assert.equal(received.size, 30);
  } finally {
    receiver.close();
  }
});

function redisPid() { return Number(readFileSync(path.join(clusterDir, 'redis.pid'), 'utf8')); }

function startRedisAgain() {
  // The command line scripts/cluster.sh uses, on the same port.
  const port = new URL(cluster.redisUrl).port;
  const dir = path.join(clusterDir, 'redis');
  const args = ['--bind', '127.0.0.1', '--port', port, '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no'];
  const asRoot = process.getuid() === 0;
  const child = asRoot
    ? spawn('setpriv', ['--reuid=redis', '--regid=redis', '--clear-groups', '--', 'redis-server', ...args], { stdio: 'ignore', detached: true })
    : spawn('redis-server', args, { stdio: 'ignore', detached: true });
  child.unref();
  execFileSync('sh', ['-c', `echo ${child.pid} > '${path.join(clusterDir, 'redis.pid')}'`]);
}

test('Redis killed mid-run: the follower on another node still gets every event, then live again once it is back', { timeout: 90000 }, async () => {
  const [, b, c] = cluster.nodes;
  const sessionId = await newSession({ tokens: 400, tokens_per_second: 50 });
  const got = [];
  const following = follow(c, sessionId, 0, got, (f) => f.event === 'done', 60000);
  await sleep(200);
  const res = await startRun(b, sessionId, 'through an outage');
  assert.equal(res.status, 200);
  const draining = (async () => { for await (const _ of sseFrames(res)); })();
  await waitFor('30 events on C', () => got.length >= 30);

  process.kill(redisPid(), 'SIGKILL');
  const atKill = got.length;
  await sleep(2000);
  assert.ok(got.length >= atKill + 40, `only ${got.length - atKill} events reached C in 2 s without Redis`);

  startRedisAgain();
  await waitFor('redis to answer', () => {
    try { execFileSync('redis-cli', ['-u', cluster.redisUrl, 'ping'], { stdio: 'ignore' }); return true; } catch { return false; }
  }, { timeoutMs: 10000, intervalMs: 100 });
  assert.equal(await following, 'stopped');
  await draining;
  assertConsecutive(got, 1, 'C across the outage');
  assert.equal(got[got.length - 1].event, 'done');

  // Live again: a run after Redis came back reaches C through it.
  const received = await metric(c, 'gateway_fanout_received_total');
  const again = [];
  const second = follow(c, sessionId, got[got.length - 1].id, again, (f) => f.event === 'done', 30000);
  await waitFor('the fan-out to reconnect on B', async () => (await metric(b, 'gateway_fanout_connected')) === 1, { timeoutMs: 15000, intervalMs: 200 });
  const res2 = await startRun(b, sessionId, 'after the outage');
  assert.equal(res2.status, 200);
  await res2.text();
  assert.equal(await second, 'stopped');
  assertConsecutive(again, got[got.length - 1].id + 1, 'the run after the outage');
  assert.ok(await metric(c, 'gateway_fanout_received_total') > received, 'C heard nothing through Redis after it came back');
});

test('kill -9 of the owner mid-run: a survivor ends the run as interrupted within the lease; followers everywhere get done', { timeout: 60000 }, async () => {
  const [a, b, c] = cluster.nodes;
  const sessionId = await newSession({ tokens: 2000, tokens_per_second: 40 });
  const onB = [];
  const onC = [];
  const followB = follow(b, sessionId, 0, onB, (f) => f.event === 'done', 40000);
  const followC = follow(c, sessionId, 0, onC, (f) => f.event === 'done', 40000);
  await sleep(200);
  const res = await startRun(a, sessionId, 'doomed');
  assert.equal(res.status, 200);
  const reading = (async () => { try { for await (const _ of sseFrames(res)); } catch { /* cut by the kill */ } })();
  await waitFor('20 tokens on B', () => onB.filter((f) => f.event === 'token').length >= 20);

  const ownerPid = Number(readFileSync(path.join(clusterDir, 'node1.pid'), 'utf8'));
  process.kill(ownerPid, 'SIGKILL');
  const killedAt = Date.now();
  assert.equal(await followB, 'stopped');
  assert.equal(await followC, 'stopped');
  const took = Date.now() - killedAt;
  await reading;
  // Within the lease, plus the sweep's period and the delivery (bounded generously).
  assert.ok(took < 3 * LEASE_S * 1000 + 2000, `the run ended ${took} ms after the kill`);
  for (const [name, frames] of [['B', onB], ['C', onC]]) {
    assertConsecutive(frames, 1, name);
    const tail = frames.slice(-2).map((f) => f.event);
    assert.deepEqual(tail, ['error', 'done'], `${name} ends with ${tail}`);
    assert.equal(frames[frames.length - 2].data.code, 'interrupted');
    assert.equal(frames[frames.length - 1].data.assistant_data.status, 'interrupted');
  }
  assert.deepEqual(onB.map((f) => f.id), onC.map((f) => f.id));
  // The survivors run the session on, numbering after the repair.
  const next = await startRun(b, sessionId, 'after the failover');
  assert.equal(next.status, 200);
  const frames = [];
  for await (const f of sseFrames(next)) {
    frames.push(f);
    // Its first event seen: abort it (the session's mock runs for 50 s), read it to done.
    if (frames.filter((g) => g.id).length === 1) assert.equal((await api(b, 'POST', `/sessions/${sessionId}/abort`, {})).status, 200);
  }
  assert.equal(frames.filter((f) => f.id)[0].id, onB[onB.length - 1].id + 1);
  assertConsecutive(frames.filter((f) => f.id), onB[onB.length - 1].id + 1, 'the run after the failover');
  assert.equal(frames[frames.length - 1].event, 'done');
});

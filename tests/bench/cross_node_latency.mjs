// Cross-node delivery latency (issue 15): how much later a follower on another node
// gets an event than the client of the run on the owner node does.
//
//   node tests/bench/cross_node_latency.mjs [--sessions 50] [--tokens 100] [--rate 20] [--reps 3]
//
// Starts `scripts/cluster.sh up 2` (PostgreSQL, Redis, two nodes, nginx) in a temporary
// directory, unless AGW_NODES="http://127.0.0.1:A http://127.0.0.1:B" names running
// nodes. Per session, a follower on node B (GET /sessions/{id}/events) and another on
// node A, the owner, are open before the run is POSTed on node A; every event's arrival
// is stamped on this process's monotonic clock. The figure is, per event,
// (arrival at the follower on B) - (arrival on the POST's own stream on A): the owner's
// commit is the moment both could start; A's stream is delivered from the commit in
// A's process, B's goes through Redis (or, missing it, the log). The same figure for
// the follower on A is printed beside it as the single-node baseline. Prints one JSON
// line per repetition, then the medians.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const SESSIONS = Number(args.sessions ?? 50);
const TOKENS = Number(args.tokens ?? 100);
const RATE = Number(args.rate ?? 20);
const REPS = Number(args.reps ?? 3);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let nodes = process.env.AGW_NODES?.split(/\s+/).filter(Boolean);
let clusterEnv;
let base;
if (!nodes) {
  base = mkdtempSync(path.join(tmpdir(), 'agw-latency-'));
  chmodSync(base, 0o755);
  clusterEnv = { ...process.env, AGW_CLUSTER_DIR: path.join(base, 'cluster') };
  const out = execFileSync(path.join(root, 'scripts/cluster.sh'), ['up', '2'], { env: clusterEnv, encoding: 'utf8' });
  nodes = [...out.matchAll(/^node \d+: (http\S+)/gm)].map((m) => m[1]);
}
const stop = () => {
  if (!clusterEnv) return;
  try { execFileSync(path.join(root, 'scripts/cluster.sh'), ['down'], { env: clusterEnv, stdio: 'ignore' }); } catch { /* reported below */ }
  rmSync(base, { recursive: true, force: true });
  clusterEnv = undefined;
};
process.on('exit', stop);
process.on('SIGINT', () => process.exit(130));

// Arrival times of the framed events of an SSE body, by id, until `done`.
async function stamp(res, into) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body) {
    const now = performance.now();
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: (\d+)$/m.exec(block);
      if (id) into.set(Number(id[1]), now);
      if (/^event: done$/m.test(block)) return;
    }
  }
}

async function oneSession(a, b) {
  const created = await fetch(`${a}/sessions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ config: { provider: 'mock', mock: { tokens: TOKENS, tokens_per_second: RATE } } }),
  });
  const { id } = await created.json();
  const owner = new Map();
  const onA = new Map();
  const onB = new Map();
  // A follower that never sees done (no fan-out, nothing delivered) is cut off in time.
  const signal = AbortSignal.timeout((TOKENS / RATE) * 1000 + 15000);
  const followA = await fetch(`${a}/sessions/${id}/events`, { headers: { 'Last-Event-ID': '0' }, signal });
  const followB = await fetch(`${b}/sessions/${id}/events`, { headers: { 'Last-Event-ID': '0' }, signal });
  const post = await fetch(`${a}/sessions/${id}/messages`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ content: 'latency' }),
  });
  if (post.status !== 200) throw new Error(`POST answered ${post.status}: ${await post.text()}`);
  const cut = (reading) => reading.catch((e) => { if (!signal.aborted) throw e; });
  await Promise.all([stamp(post, owner), cut(stamp(followA, onA)), cut(stamp(followB, onB))]);
  const cross = [];
  const local = [];
  let missing = 0;
  for (const [eventId, t] of owner) {
    if (onB.has(eventId)) cross.push(onB.get(eventId) - t); else missing++;
    if (onA.has(eventId)) local.push(onA.get(eventId) - t);
  }
  return { cross, local, missing };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

const reps = [];
try {
  for (let rep = 0; rep < REPS; rep++) {
    const results = await Promise.all(Array.from({ length: SESSIONS }, () => oneSession(nodes[0], nodes[1])));
    const cross = results.flatMap((r) => r.cross).sort((x, y) => x - y);
    const local = results.flatMap((r) => r.local).sort((x, y) => x - y);
    const line = {
      rep,
      sessions: SESSIONS,
      tokens: TOKENS,
      rate: RATE,
      events: cross.length,
      missing_on_b: results.reduce((n, r) => n + r.missing, 0),
      cross_node_p50_ms: cross.length ? +quantile(cross, 0.5).toFixed(3) : null,
      cross_node_p99_ms: cross.length ? +quantile(cross, 0.99).toFixed(3) : null,
      cross_node_max_ms: cross.length ? +cross[cross.length - 1].toFixed(3) : null,
      same_node_p50_ms: +quantile(local, 0.5).toFixed(3),
      same_node_p99_ms: +quantile(local, 0.99).toFixed(3),
    };
    reps.push(line);
    console.log(JSON.stringify(line));
  }
  const summary = { summary: 'medians', reps: reps.length };
  for (const k of ['cross_node_p50_ms', 'cross_node_p99_ms', 'same_node_p50_ms', 'same_node_p99_ms', 'missing_on_b'])
    summary[k] = median(reps.map((r) => r[k]));
  console.log(JSON.stringify(summary));
} finally {
  stop();
}

// A calibration reference for the paced figure, as issue 10 quoted one: Node's own
// http server speaking the part of the stream contract `sseload stream` drives, with
// no persistence. tests/bench/reference_ratios.sh reads the gateway's figures against
// it, measured in the same minutes. A yardstick, not a server: sessions are never
// freed and anything else gets a 404.
//
//   node tests/bench/reference_server.mjs [PORT]    (0 or none: prints the port chosen)
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const sessions = new Map();
let lastSessionId = 0;
let lastRunId = 0;

function createSession(body, res) {
  let mock = {};
  try {
    mock = JSON.parse(body || '{}')?.config?.mock ?? {};
  } catch {
    // a malformed body gets the defaults: this is a yardstick
  }
  const id = String(++lastSessionId);
  sessions.set(id, { tokens: mock.tokens ?? 10, rate: mock.tokens_per_second ?? 0, lastEventId: 0 });
  res.writeHead(201, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ id }));
}

// K token events paced from the request on an absolute schedule (no drift), then done.
// Token frames have the gateway's shape and size, as reference_server.cpp's do.
function streamRun(session, res) {
  const runId = `00000000-0000-7000-8000-${String(++lastRunId).padStart(12, '0')}`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  const start = performance.now();
  let next = 0;
  let gone = false;  // a client that leaves mid-run ends the run's timers
  res.on('close', () => { gone = true; });
  const step = () => {
    if (gone) return;
    if (next < session.tokens) {
      const content = `${next === 0 ? '' : ' '}tok${next}`;
      const data = `{"run_id":"${runId}","source":"ai_agent","content":"${content}"}`;
      res.write(`id: ${++session.lastEventId}\nevent: token\ndata: ${data}\n\n`);
      next += 1;
      if (session.rate > 0) setTimeout(step, Math.max(0, start + (next * 1000) / session.rate - performance.now()));
      else setImmediate(step);
    } else {
      res.end(`id: ${++session.lastEventId}\nevent: done\ndata: {"run_id":"${runId}","source":"ai_agent"}\n\n`);
    }
  };
  step();
}

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => { body += chunk; });
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/sessions') return createSession(body, res);
    const match = /^\/sessions\/([^/]+)\/messages$/.exec(req.url);
    const session = match && sessions.get(match[1]);
    if (req.method !== 'POST' || !session) {
      res.writeHead(404);
      return res.end();
    }
    streamRun(session, res);
  });
});
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});

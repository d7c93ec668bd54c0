// Starts the real agent-gateway binary on 127.0.0.1, port 0, with a temporary
// database, reads the bound port from its "agent-gateway listening on HOST:PORT"
// stdout line (as tests/support/gateway_process.cpp does), and stops it by PID.
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onProcessExit } from './harness.mjs';

export function gatewayBinary() {
  const bin = process.env.AGENT_GATEWAY_BINARY;
  if (!bin) throw new Error('AGENT_GATEWAY_BINARY must name the agent-gateway executable (ctest sets it)');
  if (!existsSync(bin)) throw new Error(`AGENT_GATEWAY_BINARY=${bin} does not exist: build the agent-gateway target first`);
  return bin;
}

export async function startGateway(extraEnv = {}, { startTimeoutMs = 15000 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'agw-browser-'));
  const logPath = join(dir, 'gateway.log');
  const env = {};
  // A developer's own GATEWAY_* settings must not leak into hermetic tests.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GATEWAY_')) env[k] = v;
  Object.assign(env, {
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: '0',
    GATEWAY_DB_PATH: join(dir, 'gateway.db'),
    GATEWAY_LOG_LEVEL: 'warn',
    GATEWAY_IO_THREADS: '2',
  }, extraEnv);
  const logFd = openSync(logPath, 'a');
  const child = spawn(gatewayBinary(), [], { env, stdio: ['ignore', 'pipe', logFd] });
  closeSync(logFd);
  // Never outlive the test process, whatever happens to the test.
  const forget = onProcessExit(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } });
  const log = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8') : '');

  const port = await new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => fail(new Error(`gateway did not start in ${startTimeoutMs} ms`)), startTimeoutMs);
    function fail(err) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\nstdout: ${text}\nlog: ${log()}`));
    }
    child.on('error', fail);
    child.on('exit', (code, signal) => fail(new Error(`gateway exited early (code ${code}, signal ${signal})`)));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      text += chunk;
      const m = /agent-gateway listening on [^\s]*:(\d+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve(Number(m[1]));
      }
    });
  });
  child.stdout.resume();  // keep draining stdout

  let exited = false;
  const exitedPromise = new Promise((resolve) => child.on('exit', () => { exited = true; resolve(); }));

  return {
    pid: child.pid,
    port,
    url: `http://127.0.0.1:${port}`,
    log,
    // SIGTERM (the gateway drains and exits 0), SIGKILL if it takes longer than 5 s.
    async stop() {
      if (!exited) {
        try { process.kill(child.pid, 'SIGTERM'); } catch { /* already gone */ }
        const timer = setTimeout(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
        await exitedPromise;
        clearTimeout(timer);
      }
      forget();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// JSON over HTTP straight to the gateway (not through the test's proxy).
export async function api(base, method, path, body) {
  const init = { method, headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(10000) };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`);
  return json;
}

// What the mock agent streams for {"tokens": n}: "tok0 tok1 … tok{n-1}".
export function mockTokens(n) {
  let s = '';
  for (let i = 0; i < n; i++) s += (i ? ' tok' : 'tok') + i;
  return s;
}

// The persisted conversation, oldest first.
export async function messagesOldestFirst(base, sessionId) {
  const page = await api(base, 'GET', `/sessions/${sessionId}/messages?limit=500`);
  return page.messages.slice().reverse();
}

export async function waitFor(what, predicate, { timeoutMs = 15000, intervalMs = 20 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

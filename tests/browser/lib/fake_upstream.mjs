// Starts tests/fake_upstream (FAKE_UPSTREAM_BINARY, set by ctest) on 127.0.0.1,
// port 0, reads the "http_port=N" line it prints, and stops it by PID.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { onProcessExit } from './harness.mjs';

export async function startFakeUpstream({ startTimeoutMs = 10000 } = {}) {
  const bin = process.env.FAKE_UPSTREAM_BINARY;
  if (!bin || !existsSync(bin)) throw new Error('FAKE_UPSTREAM_BINARY must name the fake_upstream executable (ctest sets it)');
  const child = spawn(bin, [], { stdio: ['ignore', 'pipe', 'inherit'] });
  const forget = onProcessExit(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } });
  const port = await new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`fake_upstream did not start in ${startTimeoutMs} ms`)), startTimeoutMs);
    child.stdout.on('data', (d) => {
      text += d;
      const m = /http_port=(\d+)\n/.exec(text);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    child.on('exit', () => { clearTimeout(timer); reject(new Error('fake_upstream exited at start-up')); });
  });
  return {
    port,
    baseURL: `http://127.0.0.1:${port}/v1`,
    async stop() {
      forget();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(child.pid, 'SIGTERM');
      await exited;
    },
  };
}

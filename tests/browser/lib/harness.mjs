// Keeps a failing or stuck test from hanging ctest: every resource a test starts
// is released in reverse order with a bounded wait, processes started here are
// killed by PID when this process exits, and a per-file watchdog ends the file
// (printing the steps it got through) if it overruns.
import { after } from 'node:test';
const exitHooks = new Set();
process.on('exit', () => {
  for (const hook of exitHooks) {
    try { hook(); } catch { /* best effort */ }
  }
});

// fn runs synchronously on process exit (e.g. kill a child by PID); returns an unregister function.
export function onProcessExit(fn) {
  exitHooks.add(fn);
  return () => exitHooks.delete(fn);
}

const steps = [];
const t0 = Date.now();
export function step(text) {
  steps.push(`${((Date.now() - t0) / 1000).toFixed(2)}s ${text}`);
}
export function stepsSoFar() {
  return steps.join('\n');
}

export function watchdog(ms, label) {
  const timer = setTimeout(() => {
    console.error(`${label}: still running after ${ms} ms; steps so far:\n${stepsSoFar()}`);
    process.exit(1);
  }, ms);
  timer.unref();
}

function bounded(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

export function resources() {
  const releases = [];
  return {
    // Registers a release step; returns the resource for chaining.
    add(resource, release, what) {
      releases.push({ release: () => release(resource), what });
      return resource;
    },
    async releaseAll() {
      for (const { release, what } of releases.reverse()) {
        try {
          await bounded(Promise.resolve().then(release), 10000, `closing ${what}`);
        } catch (err) {
          console.error(`cleanup: ${err.message}`);
        }
      }
      releases.length = 0;
    },
  };
}

// Ends the test file's process once its tests and hooks are done, keeping the
// exit code node:test set. Node 20 can spin forever while tearing down a process
// in which a socket was closed with resetAndDestroy() (seen about one run in four
// of eventsource.test.mjs, stuck in Environment::CleanupHandles after every test
// had passed); process.exit() skips that teardown.
export function exitWhenDone() {
  after(() => {
    setTimeout(() => process.exit(process.exitCode ?? 0), 200);
  });
}

// Chromium from Debian's `chromium` package, driven by playwright-core (which
// never downloads a browser of its own here).
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export async function launchChromium() {
  if (!existsSync(chromiumPath)) throw new Error(`${chromiumPath} not found: scripts/setup.sh installs Debian's chromium`);
  // launch() gives every browser a fresh temporary profile (user-data-dir).
  return chromium.launch({
    executablePath: chromiumPath,
    timeout: 45000,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// Collects what the page reports: uncaught exceptions, console errors and CSP violations.
export function watchPage(page) {
  const problems = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/favicon\.ico|Failed to load resource|net::ERR_/.test(msg.text())) problems.push(`console: ${msg.text()}`);
  });
  return problems;
}

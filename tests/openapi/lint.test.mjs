// docs/openapi.yaml is valid OpenAPI 3.1 by @redocly/cli's `lint` (the recommended
// rules, as configured in redocly.yaml beside this file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));

test('redocly lint docs/openapi.yaml', () => {
  const cli = join(here, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
  const r = spawnSync(process.execPath, [cli, 'lint', '--config', join(here, 'redocly.yaml'), join(here, '..', '..', 'docs', 'openapi.yaml')],
    { encoding: 'utf8', timeout: 60000, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
  const output = `${r.stdout}\n${r.stderr}`;
  assert.equal(r.status, 0, output);
  assert.match(output, /valid/i, output);
});

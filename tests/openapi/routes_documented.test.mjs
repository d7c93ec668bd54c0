// Every route registered in gateway/api/routes.cpp is described in docs/openapi.yaml
// (same path pattern, same method), and openapi.yaml describes no route the server lacks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// "GET /sessions/{}" for each r.add(verb::get, "/sessions/{}", ...).
export function registeredRoutes(source) {
  const out = new Set();
  for (const m of source.matchAll(/r\.add\(verb::(\w+?)_?,\s*"([^"]+)"/g)) out.add(`${m[1].toUpperCase()} ${m[2]}`);
  return out;
}

// The same form from the paths section of an OpenAPI document ({id} → {}).
export function documentedRoutes(yaml) {
  const out = new Set();
  let path = null;
  let inPaths = false;
  for (const line of yaml.split('\n')) {
    if (/^\S/.test(line)) { inPaths = line.startsWith('paths:'); path = null; continue; }
    if (!inPaths) continue;
    const p = /^ {2}(\/[^:]*):\s*$/.exec(line);
    if (p) { path = p[1].replace(/\{[^}]+\}/g, '{}'); continue; }
    const v = /^ {4}(get|put|post|delete|options|head|patch|trace):/.exec(line);
    if (v && path) out.add(`${v[1].toUpperCase()} ${path}`);
  }
  return out;
}

test('every route in routes.cpp is in openapi.yaml, and nothing else is', () => {
  const registered = registeredRoutes(readFileSync(join(root, 'gateway/api/routes.cpp'), 'utf8'));
  const documented = documentedRoutes(readFileSync(join(root, 'docs/openapi.yaml'), 'utf8'));
  assert.ok(registered.size >= 15, `found only ${registered.size} routes in routes.cpp: the pattern no longer matches`);
  assert.deepEqual([...registered].filter((r) => !documented.has(r)), [], 'routes missing from docs/openapi.yaml');
  assert.deepEqual([...documented].filter((r) => !registered.has(r)), [], 'documented routes the server does not have');
});

test('the route comparison notices a missing route', () => {
  const registered = registeredRoutes('r.add(verb::get, "/a/{}", x);\nr.add(verb::delete_, "/a/{}", y);');
  assert.deepEqual([...registered], ['GET /a/{}', 'DELETE /a/{}']);
  const documented = documentedRoutes('openapi: 3.1.0\npaths:\n  /a/{id}:\n    get:\n      x: 1\ncomponents:\n  /b:\n    get:\n');
  assert.deepEqual([...documented], ['GET /a/{}']);
});

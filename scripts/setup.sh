#!/usr/bin/env bash
# Installs the Debian packages the gateway needs to build and test. Idempotent:
# quiet and quick when everything is already there.
set -euo pipefail

packages=(
  g++ cmake make
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsqlite3-dev libspdlog-dev doctest-dev libssl-dev
  zlib1g-dev  # the event journal's record checksum (zlib's CRC-32, docs/architecture.md "Dependencies")
  libjemalloc-dev pkgconf  # the server's allocator (docs/architecture.md, "Dependencies")
  curl
  clang-format  # the format check (scripts/check_format.sh, ctest `format`)
  sqlite3  # the CLI: projection tests corrupt rows behind the server's back with it
  openssl  # the CLI: webhook tests make TLS certificates and compute HMACs with it (they fail without it)
  ca-certificates  # the system trust store https callbacks are verified against (docs/webhooks.md, "https")
  chromium  # tests/browser drives it with playwright-core (which never downloads a browser)
  nginx  # tests/integration/nginx_test.cpp runs it (foreground, temp dir) in front of the gateway: the docs/operations.md config
  prometheus-cpp-dev  # /metrics: prometheus-cpp's registry and text serializer (its core library only)
  postgresql-15 libpq-dev  # the PostgreSQL store (persistence/postgres) and its tests' throw-away servers (docs/scale-out.md)
  redis-server  # scripts/cluster.sh and the fan-out tests start one for the cross-node fan-out (docs/scale-out.md)
  libhiredis-dev  # the fan-out's Redis client (persistence/redis, hiredis 0.14 on Debian 12; docs/scale-out.md)
  iproute2  # ss: scripts/cluster.sh finds free loopback ports with it
  prometheus  # promtool, which tests/integration/metrics_test checks a real scrape with (the server is never started)
)
# tests/browser runs on Node.js (>= 20) and npm: Debian's packages only when there is none.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Each Node test package's node_modules, exactly as its lock file says; skipped while
# they match: tests/browser (playwright-core, eventsource, the openai SDK),
# tests/openapi (@redocly/cli lints docs/openapi.yaml), tests/frontends/ag-ui
# (@ag-ui/client) and tests/frontends/ai-sdk (ai@6).
npm_ci_when_changed() {
  local dir="$1" sum stamp
  sum="$(cat "$dir/package-lock.json" "$dir/package.json" | sha256sum | cut -d' ' -f1)"
  stamp="$dir/node_modules/.setup-lock.sha256"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
    echo "setup: npm ci in ${dir#"$root"/}"
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$sum" > "$stamp"
  fi
}
root="$(cd "$(dirname "$0")/.." && pwd)"
for package in tests/browser tests/openapi tests/frontends/ag-ui tests/frontends/ai-sdk; do
  npm_ci_when_changed "$root/$package"
done

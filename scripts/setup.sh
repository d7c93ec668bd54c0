#!/usr/bin/env bash
# Installs the Debian packages the gateway needs to build and test. Idempotent:
# quiet and quick when everything is already there.
set -euo pipefail

packages=(
  g++ cmake make
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsqlite3-dev libspdlog-dev doctest-dev libssl-dev
  libjemalloc-dev pkgconf  # the server's allocator (docs/architecture.md, "Dependencies")
  curl
  clang-format  # the format check (scripts/check_format.sh, ctest `format`)
  sqlite3  # the CLI: projection tests corrupt rows behind the server's back with it
  openssl  # the CLI: webhook tests make TLS certificates and compute HMACs with it (they fail without it)
  ca-certificates  # the system trust store https callbacks are verified against (docs/webhooks.md, "https")
  chromium  # tests/browser drives it with playwright-core (which never downloads a browser)
  nginx  # tests/integration/nginx_test.cpp runs it (foreground, temp dir) in front of the gateway: the docs/operations.md config
  prometheus-cpp-dev  # /metrics: prometheus-cpp's registry and text serializer (its core library only)
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

# tests/browser's node_modules, exactly as its lock file says; skipped while they match.
browser_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/browser"
lock_sum="$(cat "$browser_dir/package-lock.json" "$browser_dir/package.json" | sha256sum | cut -d' ' -f1)"
stamp="$browser_dir/node_modules/.setup-lock.sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  echo "setup: npm ci in tests/browser"
  (cd "$browser_dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$lock_sum" > "$stamp"
fi

# tests/frontends/ai-sdk's node_modules (the AI SDK, ai@6), the same way.
aisdk_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/frontends/ai-sdk"
aisdk_sum="$(cat "$aisdk_dir/package-lock.json" "$aisdk_dir/package.json" | sha256sum | cut -d' ' -f1)"
aisdk_stamp="$aisdk_dir/node_modules/.setup-lock.sha256"
if [ "$(cat "$aisdk_stamp" 2>/dev/null)" != "$aisdk_sum" ]; then
  echo "setup: npm ci in tests/frontends/ai-sdk"
  (cd "$aisdk_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$aisdk_sum" > "$aisdk_stamp"
fi

# tests/openapi's node_modules (@redocly/cli lints docs/openapi.yaml), the same way.
openapi_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/openapi"
openapi_sum="$(cat "$openapi_dir/package-lock.json" "$openapi_dir/package.json" | sha256sum | cut -d' ' -f1)"
openapi_stamp="$openapi_dir/node_modules/.setup-lock.sha256"
if [ "$(cat "$openapi_stamp" 2>/dev/null)" != "$openapi_sum" ]; then
  echo "setup: npm ci in tests/openapi"
  (cd "$openapi_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$openapi_sum" > "$openapi_stamp"
fi

# tests/frontends/ag-ui's node_modules (@ag-ui/client, the AG-UI client tests), the same way.
ag_ui_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/frontends/ag-ui"
ag_ui_sum="$(cat "$ag_ui_dir/package-lock.json" "$ag_ui_dir/package.json" | sha256sum | cut -d' ' -f1)"
ag_ui_stamp="$ag_ui_dir/node_modules/.setup-lock.sha256"
if [ "$(cat "$ag_ui_stamp" 2>/dev/null)" != "$ag_ui_sum" ]; then
  echo "setup: npm ci in tests/frontends/ag-ui"
  (cd "$ag_ui_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$ag_ui_sum" > "$ag_ui_stamp"
fi

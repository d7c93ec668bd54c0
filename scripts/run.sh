#!/usr/bin/env bash
# Sets up, builds and starts the gateway on its defaults: 127.0.0.1:8080,
# SQLite at ./data/gateway.db, the mock agent. Flags are passed to the server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec ./build/agent-gateway "$@"

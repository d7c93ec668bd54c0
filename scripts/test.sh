#!/usr/bin/env bash
# Sets up, builds (warnings are errors) and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DGATEWAY_WARNINGS_AS_ERRORS=ON
cd build
ctest --output-on-failure --timeout 1200 "$@"

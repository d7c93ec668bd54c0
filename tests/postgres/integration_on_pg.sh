#!/usr/bin/env bash
# Runs integration suites (tests/integration) against the real binary on the
# PostgreSQL store: each test case gets a database of its own on the server
# scripts/pg_temp.sh started (AGW_TEST_PG_URL). The fixtures start the binary with
# a clean GATEWAY_* environment; AGW_TEST_GATEWAY_STORE / AGW_TEST_GATEWAY_PG_URL are
# what they hand it as GATEWAY_STORE / GATEWAY_PG_URL (tests/support/gateway_process.cpp).
# GATEWAY_PG_URL is set for the test process itself (tests that start several nodes).
#
#   integration_on_pg.sh TESTS_INTEGRATION_BINARY SUITE_FILE...   (e.g. sessions_test.cpp)
set -euo pipefail
binary="$1"
shift
: "${AGW_TEST_PG_URL:?run under scripts/pg_temp.sh run}"
base="${AGW_TEST_PG_URL%/*}"
failed=0
n=0
for suite in "$@"; do
  mapfile -t cases < <("$binary" --list-test-cases --source-file="*/$suite" --no-version | sed -e '/^\[doctest\]/d' -e '/^=*$/d')
  for tc in "${cases[@]}"; do
    n=$((n + 1))
    db="agw_it_$$_$n"
    psql -q -X "$AGW_TEST_PG_URL" -c "CREATE DATABASE $db" >/dev/null
    # doctest filters are globs: escape what would be read as one.
    filter="$(printf '%s' "$tc" | sed -e 's/[][*?,\\]/\\&/g')"
    # One node id for the case's processes: a node restarted after kill -9 is the same
    # node and takes its runs' leases back at start-up (docs/scale-out.md).
    if AGW_TEST_GATEWAY_STORE=postgres AGW_TEST_GATEWAY_PG_URL="$base/$db" AGW_TEST_GATEWAY_NODE_ID=integration-node GATEWAY_PG_URL="$base/$db" "$binary" --test-case="$filter" --no-version --minimal; then
      echo "ok   [$suite] $tc"
    else
      echo "FAIL [$suite] $tc"
      failed=$((failed + 1))
    fi
    psql -q -X "$AGW_TEST_PG_URL" -c "DROP DATABASE $db WITH (FORCE)" >/dev/null
  done
done
echo "integration on postgres: $n cases, $failed failed"
[ "$n" -gt 0 ] && [ "$failed" -eq 0 ]

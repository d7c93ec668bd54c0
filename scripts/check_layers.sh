#!/usr/bin/env bash
# Fails when core/ includes Beast or SQLite: core must build without either.
set -euo pipefail
root=${1:-$(dirname "$0")/..}
if grep -rnE '#include *[<"](boost/beast|sqlite3\.h)' "$root/core"; then
  echo "check_layers: core/ must not include Beast or SQLite (see docs/architecture.md)" >&2
  exit 1
fi
if grep -rnE '#include *"(gateway|persistence)/' "$root/core"; then
  echo "check_layers: core/ must not include gateway/ or persistence/" >&2
  exit 1
fi
echo "check_layers: core/ is free of Beast, SQLite, gateway/ and persistence/"

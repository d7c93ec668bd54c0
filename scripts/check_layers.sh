#!/usr/bin/env bash
# Fails when core/ includes Beast, SQLite or libpq: core must build without any of them.
set -euo pipefail
root=${1:-$(dirname "$0")/..}
if grep -rnE '#include *[<"](boost/beast|sqlite3\.h|libpq-fe\.h|postgres|hiredis)' "$root/core"; then
  echo "check_layers: core/ must not include Beast, SQLite, libpq or hiredis (see docs/architecture.md)" >&2
  exit 1
fi
if grep -rnE '#include *"(gateway|persistence)/' "$root/core"; then
  echo "check_layers: core/ must not include gateway/ or persistence/" >&2
  exit 1
fi
# The SQLite store never reaches into the PostgreSQL one (each folder its own library).
if grep -rnE '#include *"persistence/postgres/' "$root/persistence" --include='*.cpp' --include='*.hpp' | grep -v "^$root/persistence/postgres/"; then
  echo "check_layers: persistence/ (SQLite) must not include persistence/postgres/" >&2
  exit 1
fi
# Nor does either store reach into the Redis fan-out (persistence/redis, its own library).
if grep -rnE '#include *"persistence/redis/' "$root/persistence" --include='*.cpp' --include='*.hpp' | grep -v "^$root/persistence/redis/"; then
  echo "check_layers: the stores must not include persistence/redis/" >&2
  exit 1
fi
echo "check_layers: core/ is free of Beast, SQLite, libpq, hiredis, gateway/ and persistence/"

#!/usr/bin/env bash
# A throw-away PostgreSQL (Debian's postgresql-15) in a temporary directory, on a
# free loopback port, for tests and scripts/cluster.sh. PostgreSQL refuses to run
# as root: as root, the server runs as the `postgres` system user that Debian's
# postgresql-common creates (scripts/setup.sh installs it).
#
#   scripts/pg_temp.sh start DIR    initdb + start; prints the server's URL (superuser
#                                   agw, database postgres, no password, loopback only)
#   scripts/pg_temp.sh stop DIR     stops that server by its PID, removes DIR
#   scripts/pg_temp.sh run CMD...   start in a new temp dir, run CMD with AGW_TEST_PG_URL
#                                   set, stop; exits with CMD's status
#
# Test servers run with fsync off (PG_TEMP_DURABLE=1 keeps the defaults): nothing
# in them outlives the test.
set -euo pipefail

bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$bindir/initdb" ] || { echo "pg_temp: PostgreSQL server binaries not found (scripts/setup.sh installs postgresql-15)" >&2; exit 1; }

as_server_user() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local dir="$1" port url
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  as_server_user "$bindir/initdb" -D "$dir/data" -U agw --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  local extra=""
  [ "${PG_TEMP_DURABLE:-0}" = 1 ] || extra="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  # A random free port; a race with another process taking it fails the start, and the
  # next port is tried (at most 10 times).
  for _ in $(seq 10); do
    port=$((20000 + RANDOM % 30000))
    if as_server_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 $extra" >/dev/null 2>&1; then
      url="postgresql://agw@127.0.0.1:$port/postgres"
      echo "$url" >"$dir/url"
      echo "$url"
      return 0
    fi
  done
  echo "pg_temp: the server did not start; its log:" >&2
  cat "$dir/server.log" >&2 || true
  exit 1
}

stop() {
  local dir="$1" pid
  if [ -f "$dir/data/postmaster.pid" ]; then
    pid="$(head -1 "$dir/data/postmaster.pid")"
    # SIGINT: PostgreSQL's fast shutdown (clients disconnected, no waiting for them).
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start "$2" ;;
  stop) stop "$2" ;;
  run)
    shift
    dir="$(mktemp -d /tmp/agw-pg.XXXXXX)"
    trap 'stop "$dir"' EXIT
    trap 'stop "$dir"; exit 143' INT TERM
    AGW_TEST_PG_URL="$(start "$dir")"
    export AGW_TEST_PG_URL
    status=0
    "$@" || status=$?
    exit "$status"
    ;;
  *)
    echo "usage: $0 start DIR | stop DIR | run CMD..." >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# A local cluster on loopback (docs/scale-out.md): PostgreSQL and Redis from Debian
# in a temporary directory, N gateway nodes on the PostgreSQL store, and nginx in
# front as the load balancer. Everything runs as a child of nothing: each process's
# PID is written under the cluster's directory, and `down` stops exactly those.
#
#   scripts/cluster.sh up N     start; the load balancer's URL is the last line printed
#   scripts/cluster.sh down     stop what `up` started, by PID, and remove the directory
#
# AGW_CLUSTER_DIR (default /tmp/agw-cluster) holds the state; AGW_GATEWAY_BINARY the
# binary (default ./build/agent-gateway, built by scripts/build.sh when missing).
# AGW_CLUSTER_BALANCE: `session` (default) sends every request of one session to one
# node (nginx `hash` on the session id in the path: fewest cross-node hops); `spread`
# sends each request to the node with the fewest connections (`least_conn`), so one
# session's followers are spread over every node (the fan-out benchmark).
#
# What the nodes share today: PostgreSQL (every session, conversation, event log,
# key and webhook row). Live run state is still per node, so nginx routes every
# request of one session to one node (`hash` on the session id in the path);
# Redis carries each committed batch to the followers on the other nodes (every node
# gets GATEWAY_REDIS_URL: the live fan-out, docs/scale-out.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${AGW_CLUSTER_DIR:-/tmp/agw-cluster}"
binary="${AGW_GATEWAY_BINARY:-$root/build/agent-gateway}"

# A loopback port nobody listens on now (random, checked with ss; taken at once after).
free_port() {
  local port
  for _ in $(seq 50); do
    # Below Linux's ephemeral range (32768 and up by default): a port taken there by an
    # outgoing connection between this check and the server's bind failed starts.
    port=$((20000 + RANDOM % 12000))
    if ! ss -ltnH "sport = :$port" | grep -q .; then
      echo "$port"
      return 0
    fi
  done
  echo "cluster: no free port found" >&2
  return 1
}

# Waits until url answers 200 (at most ~30 s: a loaded 2-core machine starts slowly),
# and no longer than process $2 (when given) lives.
wait_ready() {
  for _ in $(seq 300); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    if [ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null; then
      echo "cluster: the process behind $1 exited" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "cluster: $1 did not become ready" >&2
  return 1
}

as_user() {  # execs "$@" as user $1 when root, keeping the PID (so `down` stops the server itself)
  local user="$1"
  shift
  if [ "$(id -u)" -eq 0 ]; then exec setpriv --reuid="$user" --regid="$user" --clear-groups -- "$@"; else exec "$@"; fi
}

up() {
  local n="$1"
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 up N (N >= 1)" >&2; exit 2; }
  local balance='hash $agw_session consistent;'
  case "${AGW_CLUSTER_BALANCE:-session}" in
    session) ;;
    spread) balance='least_conn;' ;;
    *) echo "cluster: AGW_CLUSTER_BALANCE must be session or spread" >&2; exit 2 ;;
  esac
  if [ -e "$dir" ]; then
    echo "cluster: $dir exists (a cluster is up?): run '$0 down' first" >&2
    exit 1
  fi
  [ -x "$binary" ] || "$root/scripts/build.sh" >/dev/null
  mkdir -p "$dir"
  # Whatever fails below leaves nothing running.
  trap 'echo "cluster: start-up failed; stopping what started" >&2; cat "$dir"/node*.log >&2; down' ERR

  # PostgreSQL, durable (the test servers run with fsync off; this one does not).
  local pg_url
  pg_url="$(PG_TEMP_DURABLE=1 "$root/scripts/pg_temp.sh" start "$dir/pg")"
  psql -q -X "$pg_url" -c "CREATE DATABASE gateway" >/dev/null
  pg_url="${pg_url%/*}/gateway"
  echo "postgres: $pg_url"

  # Redis, as its Debian system user, persisting nothing (it holds nothing that is not
  # also in PostgreSQL).
  local redis_port
  redis_port="$(free_port)"
  mkdir -p "$dir/redis"
  [ "$(id -u)" -eq 0 ] && chown redis: "$dir/redis"
  as_user redis redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$dir/redis" --save "" --appendonly no \
    --daemonize no --logfile "$dir/redis/redis.log" </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/redis.pid"
  for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "redis: redis://127.0.0.1:$redis_port"

  # The nodes, one after the other: each migrates (they take turns anyway) and runs the
  # start-up repair before the next one starts.
  local servers=""
  for i in $(seq "$n"); do
    local port
    port="$(free_port)"
    GATEWAY_STORE=postgres GATEWAY_PG_URL="$pg_url" GATEWAY_REDIS_URL="redis://127.0.0.1:$redis_port" \
      GATEWAY_HOST=127.0.0.1 GATEWAY_PORT="$port" \
      GATEWAY_LOG_LEVEL="${GATEWAY_LOG_LEVEL:-warn}" "$binary" </dev/null >"$dir/node$i.log" 2>&1 &
    echo $! >"$dir/node$i.pid"
    wait_ready "http://127.0.0.1:$port/readyz" "$(cat "$dir/node$i.pid")"
    echo "node $i: http://127.0.0.1:$port (pid $(cat "$dir/node$i.pid"))"
    servers+="    server 127.0.0.1:$port max_fails=1 fail_timeout=5s;"$'\n'
  done

  # nginx: the proxy block of docs/operations.md, one upstream per node, and every
  # request of one session to one node (or spread: AGW_CLUSTER_BALANCE).
  local lb_port
  lb_port="$(free_port)"
  mkdir -p "$dir/nginx"
  cat >"$dir/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path $dir/nginx/client_body;
  proxy_temp_path $dir/nginx/proxy;
  fastcgi_temp_path $dir/nginx/fastcgi;
  uwsgi_temp_path $dir/nginx/uwsgi;
  scgi_temp_path $dir/nginx/scgi;
  # The session a request names (/sessions/{id}/...); other requests spread by request id.
  map \$uri \$agw_session {
    ~^/sessions/(?<sid>[^/]+) \$sid;
    default \$request_id;
  }
  upstream agent_gateway {
    $balance
$servers    keepalive 32;
  }
  server {
    listen 127.0.0.1:$lb_port;
    location / {
      proxy_pass http://agent_gateway;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_cache off;
      proxy_request_buffering off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }
}
CONF
  nginx -c "$dir/nginx/nginx.conf" -e "$dir/nginx/error.log" </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/nginx.pid"
  wait_ready "http://127.0.0.1:$lb_port/healthz"
  trap - ERR
  echo "load balancer:"
  echo "http://127.0.0.1:$lb_port"
}

stop_pid() {  # SIGTERM, up to 10 s, then SIGKILL; only the PID this cluster wrote down
  local file="$1" pid
  [ -f "$file" ] || return 0
  pid="$(cat "$file")"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$file"
}

down() {
  [ -d "$dir" ] || { echo "cluster: nothing at $dir"; return 0; }
  stop_pid "$dir/nginx.pid"
  for f in "$dir"/node*.pid; do stop_pid "$f"; done
  stop_pid "$dir/redis.pid"
  "$root/scripts/pg_temp.sh" stop "$dir/pg"
  rm -rf "$dir"
  echo "cluster: stopped"
}

case "${1:-}" in
  up) up "${2:-}" ;;
  down) down ;;
  *)
    echo "usage: $0 up N | down" >&2
    exit 2
    ;;
esac

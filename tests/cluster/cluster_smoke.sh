#!/usr/bin/env bash
# scripts/cluster.sh end to end: 3 nodes on one PostgreSQL behind nginx. A run made
# through the load balancer is replayed whole, with Last-Event-ID, from every node
# directly (each reads the one log in PostgreSQL); every node lists the session;
# `down` leaves none of the processes `up` started.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export AGW_CLUSTER_DIR="$(mktemp -d /tmp/agw-cluster-test.XXXXXX)/cluster"
chmod 755 "$(dirname "$AGW_CLUSTER_DIR")"  # the servers run as their own users
export AGW_GATEWAY_BINARY="${1:?usage: cluster_smoke.sh AGENT_GATEWAY_BINARY}"
trap '"$root/scripts/cluster.sh" down >/dev/null 2>&1 || true; rmdir "$(dirname "$AGW_CLUSTER_DIR")" 2>/dev/null || true' EXIT

fail() {
  echo "cluster_smoke: FAIL: $*" >&2
  exit 1
}

out="$("$root/scripts/cluster.sh" up 3)"
echo "$out"
lb="$(echo "$out" | tail -1)"
mapfile -t nodes < <(echo "$out" | sed -n 's/^node [0-9]*: \(http[^ ]*\).*/\1/p')
[ "${#nodes[@]}" -eq 3 ] || fail "expected 3 nodes, got ${#nodes[@]}"
pids="$(cat "$AGW_CLUSTER_DIR"/*.pid) $(head -1 "$AGW_CLUSTER_DIR/pg/data/postmaster.pid")"

sid="$(curl -fsS -X POST "$lb/sessions" -H 'Content-Type: application/json' \
  -d '{"config":{"mock":{"tokens":30}}}' | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')"
[ -n "$sid" ] || fail "no session id"
run="$(curl -fsS -N --max-time 20 -X POST "$lb/sessions/$sid/messages" -H 'Content-Type: application/json' -d '{"content":"hi"}')"
ids="$(echo "$run" | sed -n 's/^id: //p' | tr '\n' ' ')"
last="$(echo "$run" | sed -n 's/^id: //p' | tail -1)"
[ "$ids" = "$(seq -s ' ' 1 "$last") " ] || fail "run ids not 1..$last: $ids"
echo "$run" | grep -q '^event: done' || fail "the run did not end with done"
echo "run through the load balancer: ids 1..$last"

for node in "${nodes[@]}"; do
  replay="$(curl -s -N --max-time 2 "$node/sessions/$sid/events" -H 'Last-Event-ID: 2' || true)"
  got="$(echo "$replay" | sed -n 's/^id: //p' | tr '\n' ' ')"
  [ "$got" = "$(seq -s ' ' 3 "$last") " ] || fail "replay from $node: $got"
  curl -fsS "$node/sessions?limit=10" | grep -q "\"$sid\"" || fail "$node does not list the session"
  echo "replay from $node with Last-Event-ID: 2: ids 3..$last"
done

"$root/scripts/cluster.sh" down
for pid in $pids; do
  if kill -0 "$pid" 2>/dev/null; then fail "pid $pid still runs after down"; fi
done
echo "cluster_smoke: ok"

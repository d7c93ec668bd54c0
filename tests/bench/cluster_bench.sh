#!/usr/bin/env bash
# Issue 15's scale-out figures: W1 (1,000 paced streams) and W2 (fan-out to 1,000
# subscribers of one session) through nginx on 1 node versus 2 nodes on PostgreSQL
# and Redis (scripts/cluster.sh, AGW_CLUSTER_BALANCE=spread so that one session's
# subscribers are spread over the nodes), then the cross-node delivery latency
# (tests/bench/cross_node_latency.mjs).
#
#   tests/bench/cluster_bench.sh [REPS]        (default 3)
#
# SSELOAD: the sseload binary (../shared/bench/sseload; default ~/sseload). Gateway
# CPU is read from /proc for every node (utime + stime, summed), PostgreSQL's and
# Redis's separately; sseload's own summary lines carry the client side. The machine
# is shared: compare the 1- and 2-node lines of one invocation, taken back to back.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
reps="${1:-3}"
sseload="${SSELOAD:-$HOME/sseload}"
[ -x "$sseload" ] || { echo "cluster_bench: no sseload at $sseload (set SSELOAD)" >&2; exit 2; }
export AGW_CLUSTER_DIR="$(mktemp -d /tmp/agw-cluster-bench.XXXXXX)/cluster"
chmod 755 "$(dirname "$AGW_CLUSTER_DIR")"
export AGW_CLUSTER_BALANCE=spread
trap '"$root/scripts/cluster.sh" down >/dev/null 2>&1 || true; rm -f "$AGW_CLUSTER_DIR".reps "$AGW_CLUSTER_DIR".summary; rmdir "$(dirname "$AGW_CLUSTER_DIR")" 2>/dev/null || true' EXIT

ticks() {  # utime + stime of the given PIDs, in clock ticks
  local sum=0 pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
  done
  echo "$sum"
}

hz="$(getconf CLK_TCK)"
for nodes in 1 2; do
  out="$("$root/scripts/cluster.sh" up "$nodes")"
  lb="$(echo "$out" | tail -1)"
  node_pids="$(cat "$AGW_CLUSTER_DIR"/node*.pid | tr '\n' ' ')"
  postmaster="$(head -1 "$AGW_CLUSTER_DIR/pg/data/postmaster.pid")"
  pg_pids="$postmaster $(pgrep -d ' ' -P "$postmaster" || true)"
  for workload in "stream -c 1000 -k 100 -r 20 -min-time 10s" "fanout -s 1000 -k 200 -min-time 10s"; do
    before_gw="$(ticks $node_pids)"
    before_pg="$(ticks $pg_pids)"
    # sseload: one JSON line per repetition on stdout, the medians (human) on stderr.
    # shellcheck disable=SC2086
    "$sseload" $workload -base "$lb" -reps "$reps" -label "${nodes}node" >"$AGW_CLUSTER_DIR.reps" 2>"$AGW_CLUSTER_DIR.summary"
    gw_s="$(awk -v a="$(ticks $node_pids)" -v b="$before_gw" -v hz="$hz" 'BEGIN { printf "%.1f", (a - b) / hz }')"
    pg_s="$(awk -v a="$(ticks $pg_pids)" -v b="$before_pg" -v hz="$hz" 'BEGIN { printf "%.1f", (a - b) / hz }')"
    # CPU seconds are over all the repetitions of the workload.
    echo "{\"nodes\":$nodes,\"workload\":\"${workload%% *}\",\"gateway_cpu_s\":$gw_s,\"postgres_cpu_s\":$pg_s,\"reps\":[$(paste -sd, "$AGW_CLUSTER_DIR.reps")]}"
    sed -n '/medians over/,$p' "$AGW_CLUSTER_DIR.summary" | sed "s/^/# /"
  done
  "$root/scripts/cluster.sh" down >/dev/null
done

node "$root/tests/bench/cross_node_latency.mjs" --sessions 50 --tokens 100 --rate 20 --reps "$reps"

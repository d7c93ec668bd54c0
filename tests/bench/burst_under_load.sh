#!/usr/bin/env bash
# Two gateway binaries, alternated A-B-B-A on fresh servers: how much a burst of new
# runs disturbs the streams already running. Per run:
# - 500 sessions stream a paced run each (sseload stream -c 500 -k 300 -r 20, 15 s);
# - 5 s and 8 s in, a burst: 1,000 new sessions each start a one-token run at once
#   (sseload stream -c 1000 -k 1 -r 0), as a traffic spike would;
# - printed: the paced streams' token-gap jitter p50 / p99 (sseload's, the whole run,
#   the bursts included) and each burst's time to first event p99. Last, the medians
#   per binary.
# This machine is shared and noisy: compare binaries measured in the same run of this
# script, never across runs.
#
#   tests/bench/burst_under_load.sh BINARY_A BINARY_B [ROUNDS]
#
# ROUNDS: A-B-B-A rounds (default 2: four runs each). Every server listens on a free
# loopback port with a throw-away database and a 5 s heartbeat, and is stopped by its
# PID. Needs sseload (SSELOAD, default ~/sseload; ../shared/bench/README.md).
set -euo pipefail
source "$(dirname "$0")/listening_port.sh"
usage="usage: burst_under_load.sh BINARY_A BINARY_B [ROUNDS]"
binary_a="${1:?$usage}"
binary_b="${2:?$usage}"
rounds="${3:-2}"
sseload="${SSELOAD:-$HOME/sseload}"
[ -x "$sseload" ] || { echo "burst_under_load: no sseload at $sseload (set SSELOAD)" >&2; exit 2; }
for b in "$binary_a" "$binary_b"; do
  [ -x "$b" ] || { echo "burst_under_load: $b is not an executable" >&2; exit 2; }
done

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

figure() {  # figure NAME FILE: sseload's summary figure NAME from its last line
  tail -n 1 "$2" | grep -oE "$1=[-0-9.e+]+" | head -n 1 | cut -d= -f2
}

one_run() {  # one_run BINARY LABEL
  local binary="$1" label="$2" run_dir port=""
  run_dir="$(mktemp -d "$work/run.XXXX")"
  GATEWAY_PORT=0 GATEWAY_DB_PATH="$run_dir/gw.db" GATEWAY_LOG_LEVEL=warn GATEWAY_SSE_HEARTBEAT_INTERVAL=5 \
    "$binary" >"$run_dir/out" 2>&1 &
  server_pid=$!
  port="$(listening_port "$run_dir/out")" || { echo "burst_under_load: $binary did not report a port" >&2; cat "$run_dir/out" >&2; exit 1; }
  local base="http://127.0.0.1:$port"
  "$sseload" stream -c 500 -k 300 -r 20 -base "$base" -pid "$server_pid" -reps 1 >"$run_dir/paced" 2>&1 &
  local paced=$!
  sleep 5
  "$sseload" stream -c 1000 -k 1 -r 0 -base "$base" -reps 1 >"$run_dir/burst1" 2>&1
  sleep 3
  "$sseload" stream -c 1000 -k 1 -r 0 -base "$base" -reps 1 >"$run_dir/burst2" 2>&1
  wait "$paced"
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  local p50 p99 t1 t2
  p50="$(figure jitter_p50_ms "$run_dir/paced")"
  p99="$(figure jitter_p99_ms "$run_dir/paced")"
  t1="$(figure ttfe_p99_ms "$run_dir/burst1")"
  t2="$(figure ttfe_p99_ms "$run_dir/burst2")"
  echo "$label jitter_p50_ms=$p50 jitter_p99_ms=$p99 burst_ttfe_p99_ms=$t1,$t2"
  echo "$label $p50 $p99" >>"$work/figures"
  rm -rf "$run_dir"
}

for _ in $(seq "$rounds"); do
  one_run "$binary_a" A
  one_run "$binary_b" B
  one_run "$binary_b" B
  one_run "$binary_a" A
done

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
for label in A B; do
  binary="$binary_a"
  [ "$label" = B ] && binary="$binary_b"
  echo "median $label ($binary): jitter_p50_ms=$(awk -v l=$label '$1==l {print $2}' "$work/figures" | median)" \
    "jitter_p99_ms=$(awk -v l=$label '$1==l {print $3}' "$work/figures" | median)"
done

#!/usr/bin/env bash
# User-space instructions the gateway executes per event and per run under an sseload
# workload, counted by callgrind rather than timed: on this shared machine the timing
# noise of a load (±10–20 % from one run to the next) is larger than most changes
# left to make, and this VM has no hardware counters (docs/streaming.md, "Instructions
# counted, not timed"). Kernel time is not counted.
#
#   tests/bench/instruction_counts.sh BINARY [REPS] [-- WORKLOAD...]
#
# BINARY: a gateway binary (build/agent-gateway, or a copy of an older build to
# compare). REPS: runs (default 2; a slowed server batches a little differently from
# run to run, so read the spread). WORKLOAD: sseload's arguments (default the paced
# load at a scale callgrind keeps up with: stream -c 50 -k 200 -r 20). Each run starts
# a fresh server under `valgrind --tool=callgrind` on a free loopback port with a
# throw-away database, zeroes the counters when the load starts, dumps them when it
# ends, and stops the server by its PID. Prints one line per run: the events and runs
# sseload counted, the instructions, and the instructions per event and per run.
#
# Needs valgrind (Debian's package: apt-get install valgrind; not needed by the
# tests) and sseload (SSELOAD, default ~/sseload; ../shared/bench/README.md).
set -euo pipefail
source "$(dirname "$0")/listening_port.sh"
binary="${1:?usage: instruction_counts.sh BINARY [REPS] [-- WORKLOAD...]}"
shift
reps=2
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  reps="$1"
  shift
fi
[ "${1:-}" = "--" ] && shift
workload=("$@")
[ ${#workload[@]} -eq 0 ] && workload=(stream -c 50 -k 200 -r 20)
sseload="${SSELOAD:-$HOME/sseload}"
for tool in valgrind callgrind_control callgrind_annotate; do
  command -v "$tool" >/dev/null || { echo "instruction_counts: $tool not found (apt-get install valgrind)" >&2; exit 2; }
done
[ -x "$sseload" ] || { echo "instruction_counts: no sseload at $sseload (set SSELOAD)" >&2; exit 2; }
[ -x "$binary" ] || { echo "instruction_counts: $binary is not executable" >&2; exit 2; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

for rep in $(seq "$reps"); do
  rm -rf "${work:?}"/*
  GATEWAY_PORT=0 GATEWAY_DB_PATH="$work/gw.db" GATEWAY_LOG_LEVEL=warn GATEWAY_SSE_HEARTBEAT_INTERVAL=5 \
    valgrind --tool=callgrind --callgrind-out-file="$work/counts" "$binary" >"$work/out" 2>&1 &
  server_pid=$!
  # Up to 60 s: the server starts slowly under valgrind.
  port="$(listening_port "$work/out" 600 0.1)" || { echo "instruction_counts: the server did not report a port" >&2; cat "$work/out" >&2; exit 1; }
  callgrind_control -z "$server_pid" >/dev/null 2>&1
  line="$("$sseload" "${workload[@]}" -base "http://127.0.0.1:$port" -reps 1 2>&1 | tail -n 1)"
  callgrind_control -d "$server_pid" >/dev/null 2>&1
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  # The dump made on request is the first numbered part; the one at exit is not read.
  instructions="$(callgrind_annotate "$work/counts.1" 2>/dev/null | grep -m1 'PROGRAM TOTALS' | awk '{gsub(",", "", $1); print $1}')"
  runs="$(grep -oE ' runs=[0-9]+' <<<"$line" | cut -d= -f2 || true)"
  tokens="$(grep -oE 'k=[0-9]+' <<<"$line" | head -n 1 | cut -d= -f2 || true)"
  eps="$(grep -oE 'events_per_s=[0-9.]+' <<<"$line" | cut -d= -f2 || true)"
  if [ -z "$instructions" ] || [ -z "$runs" ] || [ -z "$tokens" ] || ! grep -q 'errors=0' <<<"$line"; then
    echo "instruction_counts: run $rep failed: $line" >&2
    exit 1
  fi
  # A mock run's events: status, its K tokens, usage and done.
  events=$((runs * (tokens + 3)))
  awk -v rep="$rep" -v i="$instructions" -v e="$events" -v r="$runs" -v eps="$eps" 'BEGIN {
    printf "run %d: runs=%d events=%d events_per_s=%s instructions=%d per_event=%.0f per_run=%.0f\n", rep, r, e, eps, i, i / e, i / r
  }'
done

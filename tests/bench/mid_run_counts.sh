#!/usr/bin/env bash
# Two gateway binaries under the same sseload workload, alternated A-B-B-A, each run on
# a fresh server: what the server does in a window in the middle of the load, where
# the runs' starts and ends are not (sseload's own server CPU figure spans them).
# Per run:
# - the server's CPU (ms per second, from /proc/PID/stat);
# - the time its threads ran, by kind (ms per second, from /proc/PID/task/*/schedstat,
#   exact where /proc/PID/stat counts 10 ms ticks): io (with the main thread), journal
#   (the event journal's thread), store (the writer, readers and WAL checkpointer),
#   other. Threads that end inside the window drop out of it (the gateway's do not);
# - its threads' voluntary and involuntary context switches per second
#   (/proc/PID/task/*/status);
# - with perf (Debian's linux-perf; optional), its system calls per second by kind;
# - sseload's summary figures. Last, the medians per binary. This machine is shared and
# noisy: compare binaries measured in the same run of this script, never across runs.
#
#   tests/bench/mid_run_counts.sh BINARY_A BINARY_B [ROUNDS] [-- WORKLOAD...]
#
# ROUNDS: A-B-B-A rounds (default 2: four runs each). WORKLOAD: sseload's arguments
# (default the paced load: stream -c 1000 -k 200 -r 20). The window starts 3 s into the
# load and lasts WINDOW seconds (default 6 without perf, 4 with: perf attaches for its
# whole span). Every server listens on a free loopback port with a throw-away database
# and a 5 s heartbeat, and is stopped by its PID. Needs sseload (SSELOAD, default
# ~/sseload; ../shared/bench/README.md).
set -euo pipefail
source "$(dirname "$0")/listening_port.sh"
usage="usage: mid_run_counts.sh BINARY_A BINARY_B [ROUNDS] [-- WORKLOAD...]"
binary_a="${1:?$usage}"
binary_b="${2:?$usage}"
shift 2
rounds=2
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  rounds="$1"
  shift
fi
[ "${1:-}" = "--" ] && shift
workload=("$@")
[ ${#workload[@]} -eq 0 ] && workload=(stream -c 1000 -k 200 -r 20)
sseload="${SSELOAD:-$HOME/sseload}"
[ -x "$sseload" ] || { echo "mid_run_counts: no sseload at $sseload (set SSELOAD)" >&2; exit 2; }
for b in "$binary_a" "$binary_b"; do
  [ -x "$b" ] || { echo "mid_run_counts: $b is not executable" >&2; exit 2; }
done
have_perf=0
command -v perf >/dev/null && perf stat -e syscalls:sys_enter_sendmsg true >/dev/null 2>&1 && have_perf=1
window="${WINDOW:-$([ $have_perf = 1 ] && echo 4 || echo 6)}"
syscalls=(epoll_wait epoll_ctl timerfd_settime futex sendmsg write clock_nanosleep)
ticks="$(getconf CLK_TCK)"

work="$(mktemp -d)"
server_pid=""
load_pid=""
cleanup() {
  for p in "$load_pid" "$server_pid"; do
    if [ -n "$p" ]; then kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

# CPU ticks, voluntary and involuntary switches of the whole process, summed over
# threads, then the microseconds run by io, journal, store and other threads.
snapshot() {
  local cpu v=0 n=0 t a b comm ran kind
  local -A run=([io]=0 [journal]=0 [store]=0 [other]=0)
  cpu="$(awk '{print $14 + $15}' "/proc/$server_pid/stat" 2>/dev/null || true)"
  # A server gone mid-run: stop here rather than read shifted fields (set -e ends the script).
  [ -n "$cpu" ] || { echo "mid_run_counts: server $server_pid is gone" >&2; return 1; }
  for t in /proc/"$server_pid"/task/*; do
    a="$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null || echo 0)"
    b="$(awk '/^nonvoluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null || echo 0)"
    v=$((v + ${a:-0}))
    n=$((n + ${b:-0}))
    comm="$(cat "$t/comm" 2>/dev/null || true)"
    ran="$(awk '{print int($1 / 1000)}' "$t/schedstat" 2>/dev/null || echo 0)"
    case "$comm" in
      agw-io-*) kind=io ;;
      agw-journal) kind=journal ;;
      agw-writer | agw-reader-* | agw-checkpoint) kind=store ;;
      agw-*) kind=other ;;
      *) kind=io ;;  # the main thread (named as the binary) runs the first io_context; the
                     # other unnamed threads (libraries') ran nothing under these loads
    esac
    run[$kind]=$((run[$kind] + ${ran:-0}))
  done
  echo "$cpu $v $n ${run[io]} ${run[journal]} ${run[store]} ${run[other]}"
}

# measure LABEL BINARY: one run; appends "label key=value..." to $work/results.
measure() {
  local label="$1" binary="$2" port="" before after line counts=""
  sync
  sleep 1
  rm -rf "$work"/gw.db*
  GATEWAY_PORT=0 GATEWAY_DB_PATH="$work/gw.db" GATEWAY_LOG_LEVEL=warn GATEWAY_SSE_HEARTBEAT_INTERVAL=5 \
    "$binary" >"$work/out" 2>&1 &
  server_pid=$!
  port="$(listening_port "$work/out")" || { echo "mid_run_counts: $binary did not report a port" >&2; cat "$work/out" >&2; exit 1; }
  "$sseload" "${workload[@]}" -base "http://127.0.0.1:$port" -pid "$server_pid" -reps 1 >"$work/load" 2>&1 &
  load_pid=$!
  sleep 3
  before=($(snapshot))
  if [ $have_perf = 1 ]; then
    local events
    events="$(printf 'syscalls:sys_enter_%s,' "${syscalls[@]}")"
    counts="$(perf stat -x, -e "${events%,}" -p "$server_pid" -- sleep "$window" 2>&1 |
      awk -F, -v w="$window" '$3 ~ /^syscalls:sys_enter_/ {sub("syscalls:sys_enter_", "", $3); printf "%s/s=%d ", $3, $1 / w}')"
  else
    sleep "$window"
  fi
  after=($(snapshot))
  wait "$load_pid" || true
  load_pid=""
  line="$(tail -n 1 "$work/load")"
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  local ran_by_kind="io_ms/s=$(((after[3] - before[3]) / 1000 / window)) journal_ms/s=$(((after[4] - before[4]) / 1000 / window))"
  ran_by_kind+=" store_ms/s=$(((after[5] - before[5]) / 1000 / window)) other_ms/s=$(((after[6] - before[6]) / 1000 / window))"
  echo "$label cpu_ms/s=$(((after[0] - before[0]) * 1000 / ticks / window)) $ran_by_kind vol/s=$(((after[1] - before[1]) / window)) invol/s=$(((after[2] - before[2]) / window)) ${counts}$(grep -oE '(events_per_s|srv_cpu_s/M|jitter_p99_ms|errors)=[-0-9.e+]+' <<<"$line" | tr '\n' ' ')" |
    tee -a "$work/results"
}

echo "# A: $binary_a"
echo "# B: $binary_b"
echo "# workload: ${workload[*]}; window ${window} s from 3 s into the load; perf: $([ $have_perf = 1 ] && echo yes || echo no)"
for round in $(seq "$rounds"); do
  measure A "$binary_a"
  measure B "$binary_b"
  measure B "$binary_b"
  measure A "$binary_a"
done

echo "# medians"
for label in A B; do
  awk -v l="$label" '$1 == l { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = v[kv[1]] " " kv[2]; if (!(kv[1] in seen)) { seen[kv[1]] = 1; order[++n] = kv[1] } } }
    END {
      printf "%s", l
      for (k = 1; k <= n; k++) {
        m = split(substr(v[order[k]], 2), xs, " ")
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (xs[j] + 0 < xs[i] + 0) { t = xs[i]; xs[i] = xs[j]; xs[j] = t }
        med = (m % 2) ? xs[(m + 1) / 2] : (xs[m / 2] + xs[m / 2 + 1]) / 2
        printf " %s=%s", order[k], med
      }
      printf "\n"
    }' "$work/results"
done

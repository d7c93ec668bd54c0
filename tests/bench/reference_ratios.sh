#!/usr/bin/env bash
# Issue 10's figures beside references measured in the same minutes: the gateway
# (embedded defaults: SQLite file, mock agent) against tests/bench/reference_server
# (one thread, epoll, no persistence, resumes from an in-memory ring) on the paced,
# max-rate, idle and resume loads, and again as `c-spread` on the paced and resume
# loads with its runs' paced tokens starting at spread moments (--spread-ms 50: one
# token period at 20 a second), as independent streams do and as the gateway's
# starts spread them; without it every run of sseload's burst shares the same few
# milliseconds (sseload's -ramp did not spread them: docs/streaming.md). Two more
# resume loads take that figure apart: resume-replay (reconnects half a period after
# a token, so an event should be waiting) and resume-lone (one session, gateway and
# c only). For the paced load also a Node reference
# (tests/bench/reference_server.mjs, no persistence). This machine is shared and
# its speed moves by a third from day to day (docs/streaming.md): a figure is read
# against the references of the same run of this script. The ratios move too, less.
#
#   tests/bench/reference_ratios.sh [ROUNDS]    (default 3; each round runs every
#                                                server once per selected workload,
#                                                in an order that rotates by round)
#
# SSELOAD: the sseload binary (../shared/bench/sseload; default ~/sseload).
# WORKLOADS: the workloads to run, by label (default every one: "paced maxrate idle
# resume resume-replay resume-lone").
# BUILD: the build directory (default build). Every run starts a fresh server on a
# free loopback port with a 5 s heartbeat, and stops it by its PID. The summary is
# the median per server and figure, then the gateway's median over each reference's.
# A failed measurement is reported and left out; the script then exits 1. Each round
# first measures how late the machine itself wakes an idle thread, and what a wake
# costs it in CPU (tests/bench/wake_latency, 5 s and under a second of hand-offs): on
# this shared virtual machine that moves by the hour. It is context for the paced
# CPU, jitter and resume figures, not a correction of them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/tests/bench/listening_port.sh"
rounds="${1:-3}"
sseload="${SSELOAD:-$HOME/sseload}"
build="${BUILD:-$root/build}"
gateway="$build/agent-gateway"
reference="$build/tests/bench/reference_server"
wake="$build/tests/bench/wake_latency"
for f in "$sseload" "$gateway" "$reference" "$wake"; do
  [ -x "$f" ] || { echo "reference_ratios: no executable at $f (set SSELOAD / BUILD)" >&2; exit 2; }
done
have_node=0
command -v node >/dev/null && have_node=1
work="$(mktemp -d /tmp/agw-ratios.XXXXXX)"
server_pid=""
failed=0
stop_server() {
  [ -n "$server_pid" ] || return 0
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  rm -rf "$work"/gw.db*
}
trap 'stop_server; rm -rf "$work"' EXIT

# start_server NAME: starts it on a free port; sets server_pid and server_port.
start_server() {
  local out="$work/$1.out"
  : >"$out"  # truncated here, not by the child's redirect, so no earlier port is read
  case "$1" in
    gateway) GATEWAY_PORT=0 GATEWAY_DB_PATH="$work/gw.db" GATEWAY_LOG_LEVEL=warn GATEWAY_SSE_HEARTBEAT_INTERVAL=5 \
               "$gateway" >"$out" 2>&1 & ;;
    c) "$reference" --port 0 --heartbeat 5 >"$out" 2>&1 & ;;
    c-spread) "$reference" --port 0 --heartbeat 5 --spread-ms 50 >"$out" 2>&1 & ;;
    node) node "$root/tests/bench/reference_server.mjs" 0 >"$out" 2>&1 & ;;
  esac
  server_pid=$!
  server_port="$(listening_port "$out")" && return 0
  echo "reference_ratios: $1 did not report a port" >&2
  cat "$out" >&2
  exit 1
}

# measure NAME LABEL WORKLOAD...: one fresh server, one sseload repetition; appends
# "NAME LABEL key=value..." to the results.
measure() {
  local name="$1" label="$2"
  shift 2
  start_server "$name"
  local line
  line="$("$sseload" "$@" -base "http://127.0.0.1:$server_port" -pid "$server_pid" -reps 1 2>&1 | tail -n 1 || true)"
  stop_server
  if ! grep -q 'errors=0' <<<"$line"; then
    echo "reference_ratios: $name $label failed: $line" >&2
    failed=1
    return 0
  fi
  local figures
  figures="$(grep -oE '(srv_cpu_s/M|jitter_p99_ms|events_per_s|idle_cpu_pct|rss_per_conn_kb|reconnect_p50_ms|reconnect_p99_ms|lost|dup)=[-0-9.e+]+' <<<"$line" | tr '\n' ' ')"
  echo "$name $label $figures" | tee -a "$work/results"
}

# machine_wake: how late this machine wakes an idle thread in these minutes, and the
# CPU a timer wake and a hand-off between two threads on two CPUs cost
# (tests/bench/wake_latency: 5 s of timer wakes, then under a second of hand-offs; no
# server running); a line of the results like a server's, so the summary has its
# median.
machine_wake() {
  local figures
  figures="$("$wake" --seconds 5 | grep -oE '(p50_ms|p99_ms|p999_ms|max_ms|cpu_us_per_wake|handoff_cpu_us)=[0-9.]+' | tr '\n' ' ')" || true
  if [ -z "$figures" ]; then
    echo "reference_ratios: machine wake failed" >&2
    failed=1
    return 0
  fi
  echo "machine wake $figures" | tee -a "$work/results"
}

# in_turn ROUND LABEL SERVERS -- WORKLOAD...: measures each server, the order rotated by ROUND.
in_turn() {
  local round="$1" label="$2"
  shift 2
  local servers=()
  while [ "$1" != "--" ]; do servers+=("$1"); shift; done
  shift
  local n=${#servers[@]} i
  for ((i = 0; i < n; i++)); do measure "${servers[$(((i + round) % n))]}" "$label" "$@"; done
}

paced_servers=(gateway c c-spread)
[ "$have_node" = 1 ] && paced_servers+=(node)
# wanted LABEL: is the workload in WORKLOADS (every one when unset)?
wanted() { [ -z "${WORKLOADS:-}" ] || [[ " $WORKLOADS " == *" $1 "* ]]; }
for w in ${WORKLOADS:-}; do
  case "$w" in
    paced | maxrate | idle | resume | resume-replay | resume-lone) ;;
    *) echo "reference_ratios: unknown workload '$w' in WORKLOADS" >&2; exit 2 ;;
  esac
done
for round in $(seq "$rounds"); do
  echo "# round $round of $rounds"
  machine_wake
  wanted paced && in_turn "$round" paced "${paced_servers[@]}" -- stream -c 1000 -k 200 -r 20
  wanted maxrate && in_turn "$round" maxrate gateway c -- stream -c 1000 -k 200 -r 0 -min-time 30s
  wanted idle && in_turn "$round" idle gateway c -- idle -n 10000 -hold 15s
  # sseload's resume reconnects one token period (50 ms) after the drop, so a
  # reconnect may come before the next token is committed and wait for it; all ten
  # subscribers drop at the same count, so their reconnects come together.
  wanted resume && in_turn "$round" resume gateway c c-spread -- resume
  # 75 ms: about half a period after a token was due, so an event should be waiting
  # and the wait is the replay's own.
  wanted resume-replay && in_turn "$round" resume-replay gateway c c-spread -- resume -reconnect-delay 75ms
  # One session: no other reconnect or run shares the moment (the replay path alone).
  wanted resume-lone && in_turn "$round" resume-lone gateway c -- resume -sessions 1 -k 300 -drop-every 3 -reconnect-delay 75ms
done

echo "# medians of $rounds (server workload figure median), then gateway / reference"
touch "$work/results"
awk '
  { for (i = 3; i <= NF; i++) { split($i, kv, "="); key = $1 " " $2 " " kv[1]; v[key] = v[key] " " kv[2] } }
  END {
    for (key in v) {
      n = split(substr(v[key], 2), xs, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (xs[j] + 0 < xs[i] + 0) { t = xs[i]; xs[i] = xs[j]; xs[j] = t }
      m[key] = (n % 2) ? xs[(n + 1) / 2] : (xs[n / 2] + xs[n / 2 + 1]) / 2
      print key, m[key]
    }
    for (key in m) {
      split(key, parts, " ")
      if (parts[1] != "gateway") continue
      for (other in m) {
        split(other, op, " ")
        if (op[1] != "gateway" && op[2] == parts[2] && op[3] == parts[3] && m[other] > 0)
          printf "ratio %s %s gateway/%s %.2f\n", parts[2], parts[3], op[1], m[key] / m[other]
      }
    }
  }' "$work/results" | sort
exit "$failed"

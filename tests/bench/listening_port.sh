# Sourced by the benchmark scripts here. listening_port FILE [TRIES] [INTERVAL]: prints the
# port a server wrote to FILE as "listening on ADDRESS:PORT" (the gateway's and the
# references' start-up line), polling TRIES times INTERVAL seconds apart (default 200 ×
# 0.05 s); returns 1, printing nothing, when none came.
listening_port() {
  local file="$1" tries="${2:-200}" interval="${3:-0.05}" port=""
  for _ in $(seq "$tries"); do
    port="$(grep -oE 'listening on [^ ]*:[0-9]+' "$file" | grep -oE '[0-9]+$' || true)"
    if [ -n "$port" ]; then
      echo "$port"
      return 0
    fi
    sleep "$interval"
  done
  return 1
}

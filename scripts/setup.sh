#!/usr/bin/env bash
# Installs the Debian packages the gateway needs to build and test. Idempotent:
# quiet and quick when everything is already there.
set -euo pipefail

packages=(
  g++ cmake make
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libsqlite3-dev libspdlog-dev doctest-dev libssl-dev
  curl
  sqlite3  # the CLI: projection tests corrupt rows behind the server's back with it
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

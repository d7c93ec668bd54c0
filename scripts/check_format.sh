#!/usr/bin/env bash
# Fails when a C++ file of the project is not formatted as .clang-format says
# (Debian's clang-format, installed by scripts/setup.sh). `--fix` formats them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.ipp')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
if ! clang-format --dry-run -Werror "${files[@]}" 2>"$report"; then
  grep -E '(warning|error):' "$report" | head -20 >&2
  echo "check_format: the files above differ from .clang-format (scripts/check_format.sh --fix)" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files match .clang-format"

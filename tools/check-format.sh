#!/usr/bin/env bash
# Checks that every C++ file we write is as clang-format (.clang-format)
# would write it; third_party/ is not ours. With --fix, rewrites them.
#   tools/check-format.sh [--fix]
set -uo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed"; exit 1; }
mapfile -t files < <(git ls-files '*.cc' '*.h' | grep -v '^third_party/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
# One clang-format for all files (one process per file took 30 s of a
# 2-core machine): it reports each violation as "FILE:LINE:COL: error:".
if ! out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
  mapfile -t bad < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: error: ' <<< "$out" | cut -d: -f1 | sort -u)
  for f in "${bad[@]}"; do
    echo "check-format: $f differs from clang-format (tools/check-format.sh --fix)"
  done
  # Anything else (a file clang-format could not read): as it said it.
  [ "${#bad[@]}" -eq 0 ] && echo "$out" | head -20
  echo "check-format: ${#bad[@]} of ${#files[@]} files differ"
  exit 1
fi
echo "check-format: ${#files[@]} files as clang-format writes them"

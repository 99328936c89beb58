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
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check-format: $f differs from clang-format (tools/check-format.sh --fix)"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -ne 0 ]; then
  echo "check-format: $bad of ${#files[@]} files differ"
  exit 1
fi
echo "check-format: ${#files[@]} files as clang-format writes them"

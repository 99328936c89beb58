#!/usr/bin/env bash
# The copy-paste recipes in docs/user-guide.md are what the consumer tests
# run: each fenced block that follows a line "<!-- recipe: PATH -->" must be
# exactly the lines of PATH between "# --- the recipe: begin" and
# "# --- the recipe: end". Fails naming the first block that differs.
set -euo pipefail
cd "$(dirname "$0")/.."
doc=docs/user-guide.md
count=0
status=0
while IFS= read -r path; do
  count=$((count + 1))
  want=$(sed -n '/# --- the recipe: begin/,/# --- the recipe: end/p' "$path" | sed '1d;$d')
  got=$(awk -v tag="<!-- recipe: $path -->" '
    $0 == tag { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$doc")
  if [ -z "$want" ]; then
    echo "$path has no '# --- the recipe: begin/end' lines"
    status=1
  elif [ "$got" != "$want" ]; then
    echo "$doc's recipe for $path differs from the file:"
    diff -u <(echo "$want") <(echo "$got") || true
    status=1
  fi
done < <(sed -n 's/^<!-- recipe: \(.*\) -->$/\1/p' "$doc")
[ "$count" -gt 0 ] || { echo "$doc has no recipes"; exit 1; }
[ "$status" -eq 0 ] && echo "$count recipes in $doc match the files the tests run"
exit $status

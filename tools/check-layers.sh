#!/usr/bin/env bash
# Checks the layer map in docs/architecture.md against the Bazel graph:
# for each row, no non-test target under "targets" may depend (directly or
# not) on anything under "may not depend on". Prints each violation with a
# path that shows it, and exits non-zero if there is one.
set -uo pipefail
cd "$(dirname "$0")/.."
map=$(sed -n '/<!-- layers: begin -->/,/<!-- layers: end -->/p' docs/architecture.md |
      grep '^| `//')
[ -n "$map" ] || { echo "check-layers: no layer map in docs/architecture.md"; exit 1; }
bad=0
rows=0
while IFS= read -r row; do
  targets=$(echo "$row" | cut -d'|' -f2 | tr -d '` ')
  forbidden=$(echo "$row" | cut -d'|' -f4 | tr -d '`' | xargs)
  rows=$((rows + 1))
  [ -z "$forbidden" ] && continue
  union=$(echo "$forbidden" | sed 's/ / + /g')
  subject="attr(testonly, 0, kind('cc_library|cc_binary', $targets))"
  found=$(bazel query --noshow_progress "deps($subject) intersect ($union)" 2>/dev/null)
  if [ $? -ne 0 ]; then
    echo "check-layers: query failed for $targets"
    bad=1
    continue
  fi
  if [ -n "$found" ]; then
    bad=1
    for t in $found; do
      echo "check-layers: $targets may not depend on $t; a path:"
      bazel query --noshow_progress "somepath($subject, $t)" 2>/dev/null | sed 's/^/    /'
    done
  fi
done <<< "$map"
if [ "$bad" -eq 0 ]; then
  echo "check-layers: $rows layers, no forbidden dependency"
fi
exit $bad

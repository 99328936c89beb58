#!/bin/sh
# The main program runs, exits 0, and reports that conservation holds with
# every echo call answered.
set -eu
out=$(examples/pool_demo)
echo "$out"
echo "$out" | grep -q "calls ok 2000, failed 0"
echo "$out" | grep -q "conservation .*: holds"

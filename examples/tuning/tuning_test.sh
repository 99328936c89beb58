#!/bin/sh
# Every configuration's calls succeed, and the idle timeout visibly retires
# connections.
set -eu
out=$(examples/tuning/tuning)
echo "$out"
echo "$out" | grep -q "all calls succeeded"
echo "$out" | grep "idle_timeout_ms=200" | awk '{ if ($NF < 1) exit 1 }'

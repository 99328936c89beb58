#!/bin/sh
# Every configuration's calls succeed, the idle timeout visibly retires
# connections, and the reservoir lets the second thread reuse the first's.
set -eu
out=$(examples/tuning/tuning)
echo "$out"
echo "$out" | grep -q "all calls succeeded"
echo "$out" | grep "idle_timeout_ms=200" | awk '{ if ($NF < 1) exit 1 }'
# Without the reservoir thread 1 dials its own; with it, it unparks.
echo "$out" | grep "no reservoir" | awk '{ if ($(NF-1) != 0) exit 1 }'
echo "$out" | grep "reservoir_capacity=16" | awk '{ if ($(NF-1) < 1) exit 1 }'

#!/bin/sh
# loadgen runs every client for both call types and each completes calls
# with no error (it exits 1 on any error). Only that: speed is measured by
# running loadgen itself, never asserted in a test.
set -eu
for type in unary bidi; do
  out=$(bench/loadgen --type=$type --concurrency=1,8 --sizes=0,1024 --duration=0.3 \
        --warmup=0.1 --rounds=1 --threads=2 --json_only)
  echo "$out"
  n=$(echo "$out" | grep -c '^JSON ')
  [ "$n" -eq 16 ] || { echo "expected 16 JSON lines, got $n"; exit 1; }
  if echo "$out" | grep '^JSON ' | grep -q '"calls":0,'; then
    echo "a client completed no call"; exit 1
  fi
done

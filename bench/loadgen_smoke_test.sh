#!/bin/sh
# loadgen runs every client for every call type and each completes calls
# with no error (it exits 1 on any error). Only that: speed is measured by
# running loadgen itself, never asserted in a test.
set -eu
# unary: 9 clients (the callback, blocking and CompletionQueue ringrpc
# forms, grpc++'s CompletionQueue client and the transport floor too),
# bidi: 4,
# stream: 3 (ringrpc, grpc1, grpcK); 2 concurrencies x 2 sizes each (the
# stream's messages 1 KiB and 64 KiB).
for type in unary bidi stream; do
  sizes=0,1024
  [ "$type" = stream ] && sizes=1024,65536
  out=$(bench/loadgen --type=$type --concurrency=1,8 --sizes=$sizes --duration=0.3 \
        --warmup=0.1 --rounds=1 --threads=2 --json_only \
        --clients=ringrpc,ringrpc_cb,ringrpc_sync,ringrpc_cq,grpc_cq,grpc1,grpcK,transport,tcp)
  echo "$out"
  want=16
  [ "$type" = unary ] && want=36
  [ "$type" = stream ] && want=12
  n=$(echo "$out" | grep -c '^JSON ')
  [ "$n" -eq "$want" ] || { echo "expected $want JSON lines, got $n"; exit 1; }
  if echo "$out" | grep '^JSON ' | grep -q '"calls":0,'; then
    echo "a client completed no call"; exit 1
  fi
done

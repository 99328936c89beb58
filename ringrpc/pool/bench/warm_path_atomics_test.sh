#!/bin/sh
# The pool's warm checkout+return path holds no atomic read-modify-write.
exec python3 tools/check_warm_path.py ringrpc/pool/bench/pool_benchmark

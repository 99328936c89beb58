#!/bin/sh
# A method named like a generated name is a protoc error naming the file and
# the method, not a crash and not C++ that fails to compile.
set -u
out=$(/usr/bin/protoc -I. --ringrpc_out="${TEST_TMPDIR:-/tmp}" \
  --plugin=protoc-gen-ringrpc=codegen/protoc-gen-ringrpc codegen/testdata/clash.proto 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || { echo "protoc accepted a clashing method"; exit 1; }
echo "$out" | grep -q "codegen/testdata/clash.proto: method ringrpc.codegen_test.clash.S.NewStub clashes" || exit 1

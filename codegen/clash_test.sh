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

# A nested namespace named ringrpc (or grpc) would hide ::ringrpc from user
# code in the package namespace: refused with the reason.
out=$(/usr/bin/protoc -I. --ringrpc_out=nested_namespace=ringrpc:"${TEST_TMPDIR:-/tmp}" \
  --plugin=protoc-gen-ringrpc=codegen/protoc-gen-ringrpc codegen/testdata/clash.proto 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || { echo "protoc accepted nested_namespace=ringrpc"; exit 1; }
echo "$out" | grep -q "nested_namespace=ringrpc would hide ::ringrpc" || exit 1

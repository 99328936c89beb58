#!/bin/sh
# protoc-gen-ringrpc's output for codegen/testdata/tricky.proto, byte for
# byte against the committed golden files (tools/regen-golden.sh updates
# them after an intended change).
set -eu
status=0
for file in tricky.ringrpc.pb.h tricky.ringrpc.pb.cc tricky_mock.ringrpc.pb.h; do
  got="codegen/_tricky_ringrpc_gen/codegen/testdata/$file"
  want="codegen/testdata/$file.golden"
  if ! diff -u "$want" "$got"; then
    echo "generated $got differs from $want (run tools/regen-golden.sh if intended)"
    status=1
  fi
done
exit $status

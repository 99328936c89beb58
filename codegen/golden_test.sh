#!/bin/sh
# protoc-gen-ringrpc's output for codegen/testdata/tricky.proto, byte for
# byte against the committed golden files (tools/regen-golden.sh updates
# them after an intended change).
set -eu
status=0
for ext in h cc; do
  got="codegen/_tricky_ringrpc_gen/codegen/testdata/tricky.ringrpc.pb.$ext"
  want="codegen/testdata/tricky.ringrpc.pb.$ext.golden"
  if ! diff -u "$want" "$got"; then
    echo "generated $got differs from $want (run tools/regen-golden.sh if intended)"
    status=1
  fi
done
exit $status

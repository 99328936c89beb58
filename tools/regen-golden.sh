#!/usr/bin/env bash
# Rewrites codegen's golden files from the current protoc-gen-ringrpc.
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build //codegen:tricky_ringrpc_gen
for ext in h cc; do
  cp -f "bazel-bin/codegen/_tricky_ringrpc_gen/codegen/testdata/tricky.ringrpc.pb.$ext" \
        "codegen/testdata/tricky.ringrpc.pb.$ext.golden"
done
echo "golden files updated: codegen/testdata/tricky.ringrpc.pb.{h,cc}.golden"

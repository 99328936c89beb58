#!/usr/bin/env bash
# Rewrites codegen's golden files from the current protoc-gen-ringrpc.
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build //codegen:tricky_ringrpc_gen
for file in tricky.ringrpc.pb.h tricky.ringrpc.pb.cc tricky_mock.ringrpc.pb.h; do
  cp -f "bazel-bin/codegen/_tricky_ringrpc_gen/codegen/testdata/$file" \
        "codegen/testdata/$file.golden"
done
echo "golden files updated: codegen/testdata/tricky{.ringrpc.pb.h,.ringrpc.pb.cc,_mock.ringrpc.pb.h}.golden"

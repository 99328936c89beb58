#!/usr/bin/env bash
# The mechanical rewrite that moves grpc++ client code to ringrpc, as
# docs/migrating.md describes it: reads C++ or a Bazel BUILD file on stdin
# (or each FILE given, rewritten in place), writes it with
#
#   C++:   #include <grpcpp/grpcpp.h> (and any other <grpcpp/...> or
#          <grpc++/...> client header)      -> #include "ringrpc/ringrpc.h"
#          #include <grpcpp/test/mock_stream.h> -> "ringrpc/testing/mock_stream.h"
#          "X.grpc.pb.h", "X_mock.grpc.pb.h"  -> "X.ringrpc.pb.h", "X_mock.ringrpc.pb.h"
#          grpc::                              -> ringrpc::   (grpc::testing:: too)
#   BUILD: cc_grpc_library / grpcpp_cc_library -> ringrpc_cc_library (its load
#          line too; grpc_only = True dropped), @com_github_grpc_grpc//:grpc++
#          and @system//:grpcpp -> @ringrpc//ringrpc (//ringrpc inside ringrpc)
#
# Names grpc++ keeps outside the grpc namespace (GRPC_ARG_*, GRPC_CHANNEL_*,
# grpc_connectivity_state, GRPC_COMPRESS_*, GPR_ASSERT) are ringrpc's too
# and are left as they are.
#
#   tools/migrate.sh < greeter_client.cc > greeter_client_ringrpc.cc
#   tools/migrate.sh client/*.cc client/BUILD.bazel      # in place
#   RINGRPC_LABEL=//ringrpc tools/migrate.sh ...         # inside this repository
set -euo pipefail
label="${RINGRPC_LABEL:-@ringrpc//ringrpc}"
bzl="${RINGRPC_BZL:-@ringrpc//codegen:ringrpc.bzl}"
rewrite() {
  sed -E \
    -e 's@#include <grpcpp/test/mock_stream\.h>@#include "ringrpc/testing/mock_stream.h"@' \
    -e 's@#include <grpc(pp|\+\+)/[A-Za-z0-9_/.+]*\.h>@#include "ringrpc/ringrpc.h"@' \
    -e 's@(#include "[^"]*)\.grpc\.pb\.h"@\1.ringrpc.pb.h"@' \
    -e 's@(^|[^A-Za-z0-9_])grpc::@\1ringrpc::@g' \
    -e 's%load\("[^"]*(cc_grpc_library|grpcpp)\.bzl", *"(cc_grpc_library|grpcpp_cc_library)"\)%load("'"$bzl"'", "ringrpc_cc_library")%' \
    -e 's@(^|[^A-Za-z0-9_])(cc_grpc_library|grpcpp_cc_library)\(@\1ringrpc_cc_library(@' \
    -e '/^[[:space:]]*grpc_only = True,[[:space:]]*$/d' \
    -e 's%"(@com_github_grpc_grpc//:grpc\+\+|@system//:grpcpp)"%"'"$label"'"%'
}
if [ $# -eq 0 ]; then
  rewrite
else
  for f in "$@"; do
    rewrite < "$f" > "$f.migrate.tmp" && mv "$f.migrate.tmp" "$f"
  done
fi

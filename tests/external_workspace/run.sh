#!/usr/bin/env bash
# Builds the user workspace that depends on ringrpc (local_repository +
# ringrpc_dependencies(), protos from the @shared_protos repository) and runs
# its program: grpc++ and ringrpc clients against its embedded grpc++
# server. Then checks that the program holds one definition of the
# messages' descriptor table (the user's cc_proto_library's, not a second
# copy from a stub library).
set -uo pipefail
cd "$(dirname "$0")"
bazel build --noshow_progress //:client || exit 1
./bazel-bin/client || exit 1
symbol=descriptor_table_greet_2fv1_2fgreeter_2eproto
defs=$(nm bazel-bin/client | grep -cE " [DdRrBb] ${symbol}\$")
echo "definitions of $symbol: $defs"
[ "$defs" -eq 1 ]

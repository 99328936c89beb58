#!/usr/bin/env bash
# Builds the user workspace that depends on ringrpc through
# local_repository, and runs its client against a port with no server:
# it must build, link, run, and end UNAVAILABLE with the cause.
set -uo pipefail
cd "$(dirname "$0")"
bazel build //:client || exit 1
out=$(./bazel-bin/client 127.0.0.1:1)
rc=$?
echo "$out"
[ "$rc" -eq 3 ] && echo "$out" | grep -q "Connection refused"

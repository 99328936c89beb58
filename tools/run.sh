#!/usr/bin/env bash
# Builds and runs the main program (installing the Debian packages it lacks
# first): examples/helloworld, a grpc++ Greeter server embedded on a free
# loopback port called through the generated ringrpc stub (blocking,
# callback, coroutine, server stream). Extra arguments go to it
# (--target=host:port talks to an existing server).
#
# Prints a line per phase and the program's output; Bazel's progress and
# INFO lines are off (warnings and errors still show).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== ringrpc: checking the Debian packages (installing what is missing)"
tools/install-deps.sh
echo "== ringrpc: building //examples/helloworld (a few minutes the first time)"
if ! bazel build --noshow_progress --show_result=0 --ui_event_filters=-info //examples/helloworld; then
  echo "== ringrpc: the build failed (above); again with progress: bazel build //examples/helloworld"
  exit 1
fi
echo "== ringrpc: running examples/helloworld"
exec bazel-bin/examples/helloworld/helloworld "$@"

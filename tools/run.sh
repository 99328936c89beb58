#!/usr/bin/env bash
# Builds and runs the main program (installing the Debian packages it lacks
# first): examples/helloworld, a grpc++ Greeter server embedded on a free
# loopback port called through the generated ringrpc stub (blocking,
# callback, coroutine, server stream). Extra arguments go to it
# (--target=host:port talks to an existing server).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
exec bazel run //examples/helloworld -- "$@"

#!/usr/bin/env bash
# Builds and runs the main program (installing the Debian packages it lacks
# first). Until the gRPC client exists, that is the pool demo: real loopback
# TCP connections shared by worker threads through one ringrpc pool.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
exec bazel run //examples:pool_demo -- "$@"

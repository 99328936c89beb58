#!/bin/sh
# Soak: mixed call types with injected faults for N minutes (default 10),
# then calls, failures by code, RSS and sockets (docs/reliability.md).
#   tools/soak.sh [minutes]
set -eu
cd "$(dirname "$0")/.."
tools/install-deps.sh
minutes=${1:-10}
exec bazel run //tests/faults:soak -- --minutes="$minutes" --report_s=60

#!/usr/bin/env bash
# Runs the pool's property test for many steps (default 5,000,000) under
# ASAN+UBSAN with debug checks on. Usage: tools/pool-property.sh [steps] [seed]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
steps="${1:-5000000}"
seed="${2:-$(date +%s)}"
echo "property test: $steps steps from seed $seed"
bazel test --config=asan //ringrpc/pool:property_test --test_output=all \
  --test_env=RINGRPC_PROPERTY_STEPS="$steps" \
  --test_env=RINGRPC_PROPERTY_SEED="$seed" \
  --test_timeout=3600 --cache_test_results=no

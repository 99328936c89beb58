#!/usr/bin/env bash
# tests/xds/reference/run.sh — the xDS scenarios with grpc-js-xds as the
# client (tests/xds:reference_client_test). Installs the npm packages of
# package-lock.json from the npm registry once (npm ci, cached under
# ~/.cache/ringrpc by the lock file's hash), then runs the test with them.
# Extra arguments go to `bazel test`. With --install: installs, prints the
# node_modules directory and stops (tools/test.sh runs the test itself).
set -euo pipefail
cd "$(dirname "$0")/../../.."

if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "reference: installing nodejs and npm" >&2
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >&2
fi

lock=tests/xds/reference/package-lock.json
hash=$(sha256sum "$lock" | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/ringrpc/xds-reference-$hash"
if [ ! -d "$dir/node_modules/@grpc/grpc-js-xds" ]; then
  echo "reference: npm ci into $dir" >&2
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  cp tests/xds/reference/package.json "$lock" "$dir.tmp/"
  (cd "$dir.tmp" && npm ci --no-audit --no-fund --ignore-scripts > npm.log 2>&1) || {
    cat "$dir.tmp/npm.log" >&2
    exit 1
  }
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
fi

if [ "${1:-}" = "--install" ]; then
  echo "$dir/node_modules"
  exit 0
fi
exec bazel test //tests/xds:reference_client_test \
  --test_env=RINGRPC_XDS_REFERENCE_NODE_MODULES="$dir/node_modules" "$@"

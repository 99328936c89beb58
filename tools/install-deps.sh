#!/usr/bin/env bash
# Installs the Debian 12 packages ringrpc builds and tests with, if any are
# missing. Idempotent: when everything is present it only runs dpkg-query.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-platforms bazel-skylib bazel-rules-proto bazel-rules-java
  g++ clang clang-format libclang-rt-14-dev
  libgrpc++-dev protobuf-compiler-grpc libre2-dev
  libprotobuf-dev libprotoc-dev protobuf-compiler
  libabsl-dev liburing-dev libnghttp2-dev libssl-dev libc-ares-dev
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  cmake make pkgconf
  dnsmasq-base tinyproxy-bin
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

# apt's own output (some hundred lines of unpacking) goes to a log; on a
# failure its last lines are shown.
log="${TMPDIR:-/tmp}/ringrpc-install-deps.log"
echo "install-deps: installing ${#missing[@]} Debian packages (${missing[*]}); apt's output in $log" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } > "$log" 2>&1; then
  tail -30 "$log" >&2
  echo "install-deps: apt-get failed (the whole log: $log)" >&2
  exit 1
fi
echo "install-deps: done" >&2

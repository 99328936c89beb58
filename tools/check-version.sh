#!/usr/bin/env bash
# The version is written in three places; they must agree:
# ringrpc/client/version.h (RINGRPC_VERSION), CMakeLists.txt (project VERSION) and
# deps.bzl (RINGRPC_VERSION). Prints it, or what differs (exit 1).
set -euo pipefail
cd "$(dirname "$0")/.."
header=$(sed -n 's/^#define RINGRPC_VERSION "\(.*\)"$/\1/p' ringrpc/client/version.h)
cmake=$(sed -n 's/^project(ringrpc VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
bzl=$(sed -n 's/^RINGRPC_VERSION = "\(.*\)"$/\1/p' deps.bzl)
parts=$(sed -n 's/^#define RINGRPC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' ringrpc/client/version.h |
        paste -sd.)
if [ -z "$header" ] || [ "$header" != "$cmake" ] || [ "$header" != "$bzl" ] ||
   [ "$header" != "$parts" ]; then
  echo "check-version: ringrpc/client/version.h says '$header' ($parts), CMakeLists.txt '$cmake'," \
       "deps.bzl '$bzl'"
  exit 1
fi
echo "check-version: $header everywhere"

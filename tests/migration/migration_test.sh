#!/usr/bin/env bash
# The migration proof. For each client NAME given: grpcpp/NAME.cc is grpc++
# code; ringrpc/NAME.cc is exactly what tools/migrate.sh makes of it (no
# hand edits: checked here). Both binaries run against one grpc++ server
# and must print the same lines. Then docs/migrating.md's per-file table
# must hold the rows this test measures.
set -euo pipefail
dir=tests/migration
work="${TEST_TMPDIR:-/tmp}/migration"
mkdir -p "$work"
"$dir/server" > "$work/server.out" 2> "$work/server.err" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 100); do
  port=$(awk '/^PORT /{print $2}' "$work/server.out")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "the grpc++ server did not start"; cat "$work/server.err"; exit 1; }
target="127.0.0.1:$port"

status=0
rows=()
row() {  # name: "| file | lines | rewritten by migrate.sh | edited by hand |"
  local src="$dir/grpcpp/$1.cc" out="$dir/ringrpc/$1.cc"
  local lines rewritten hand
  lines=$(wc -l < "$src")
  rewritten=$(diff "$src" "$out" | grep -c '^>' || true)
  hand=$(tools/migrate.sh < "$src" | diff - "$out" | grep -c '^>' || true)
  if [ "$hand" -ne 0 ]; then
    echo "FAIL $1: ringrpc/$1.cc is not migrate.sh's output ($hand lines differ)"
    status=1
  fi
  rows+=("| \`$1.cc\` | $lines | $rewritten | $hand |")
}
for name in "$@"; do
  row "$name"
  "$dir/grpcpp_$name" "$target" > "$work/$name.grpcpp" 2>&1 || echo "(exit $?)" >> "$work/$name.grpcpp"
  "$dir/ringrpc_$name" "$target" > "$work/$name.ringrpc" 2>&1 || echo "(exit $?)" >> "$work/$name.ringrpc"
  # grpc++'s own callback route_guide client prints an echo of its bidi
  # stream twice in about half its runs (grpc++ 1.51, seen on 2 cores):
  # ringrpc's output must equal what grpc++'s client prints in one of a
  # few runs, not in its first alone.
  for again in 1 2 3 4 5; do
    cmp -s "$work/$name.grpcpp" "$work/$name.ringrpc" && break
    echo "   $name: grpc++'s client printed otherwise (run $again); running it again"
    "$dir/grpcpp_$name" "$target" > "$work/$name.grpcpp" 2>&1 || echo "(exit $?)" >> "$work/$name.grpcpp"
  done
  if diff -u "$work/$name.grpcpp" "$work/$name.ringrpc" > "$work/$name.diff"; then
    echo "ok $name: $(wc -l < "$work/$name.grpcpp") lines, the same from both"
  else
    echo "FAIL $name: grpc++ and ringrpc print differently"
    cat "$work/$name.diff"
    status=1
  fi
  # A run that printed nothing would compare equal: each client greets.
  if ! grep -qE 'Hello|Found feature' "$work/$name.grpcpp"; then
    echo "FAIL $name: no reply in its output"
    cat "$work/$name.grpcpp"
    status=1
  fi
done
row greeter_mock_test  # run by Bazel as grpcpp_ and ringrpc_greeter_mock_test

# The BUILD side of the rewrite: grpc's cc_grpc_library and grpc++'s target.
build_in='load("@com_github_grpc_grpc//bazel:cc_grpc_library.bzl", "cc_grpc_library")

cc_grpc_library(
    name = "greeter_grpc",
    srcs = [":greeter_proto"],
    grpc_only = True,
    generate_mocks = True,
    deps = [":greeter_cc_proto"],
)

cc_binary(
    name = "client",
    deps = [":greeter_grpc", "@com_github_grpc_grpc//:grpc++"],
)'
build_want='load("@ringrpc//codegen:ringrpc.bzl", "ringrpc_cc_library")

ringrpc_cc_library(
    name = "greeter_grpc",
    srcs = [":greeter_proto"],
    generate_mocks = True,
    deps = [":greeter_cc_proto"],
)

cc_binary(
    name = "client",
    deps = [":greeter_grpc", "@ringrpc//ringrpc"],
)'
if build_got=$(echo "$build_in" | tools/migrate.sh) && [ "$build_got" = "$build_want" ]; then
  echo "ok BUILD: cc_grpc_library becomes ringrpc_cc_library"
else
  echo "FAIL BUILD rewrite:"
  diff <(echo "$build_want") <(echo "$build_got") || true
  status=1
fi

for r in "${rows[@]}"; do
  if ! grep -qxF -- "$r" docs/migrating.md; then
    echo "FAIL docs/migrating.md lacks the measured row: $r"
    status=1
  fi
done
printf '%s\n' "${rows[@]}"
exit $status

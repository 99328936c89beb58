#!/usr/bin/env bash
# Runs every test: the whole suite in the default configuration (optimised,
# line tables), again under ASAN+UBSAN, the concurrent tests (tag "tsan")
# under ThreadSanitizer, the channel, fault and race suites on the epoll
# loop, the xDS scenarios with grpc-js-xds as the client
# (tests/xds/reference), the layer check (docs/architecture.md's map against
# the Bazel graph), a clang build of the library with -Wthread-safety as
# errors, and the two consumers: a Bazel workspace and a CMake project that
# use ringrpc as a dependency. Installs the Debian packages it lacks first.
# Ends with the line "tests: N passed, M failed" (one count per test target
# per configuration) and exits non-zero if anything failed or did not build.
set -uo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh || { echo "tests: 0 passed, 1 failed"; exit 1; }

logdir="${TMPDIR:-/tmp}/ringrpc-test-logs"
mkdir -p "$logdir"
total_pass=0
total_fail=0
status=0

run_config() {
  local name="$1"; shift
  local log="$logdir/$name.log"
  echo "== $name: bazel test $*"
  local start=$SECONDS
  # No "|| true" here: it would replace PIPESTATUS with its own (0) and
  # hide Bazel's exit status (the script does not use set -e).
  bazel test --keep_going "$@" 2>&1 | tee "$log" | grep -E '^//|^Executed|^ERROR'
  local rc=${PIPESTATUS[0]}
  local pass fail
  pass=$(grep -cE '^//\S+\s+(\(cached\) )?PASSED' "$log")
  fail=$(grep -cE '^//\S+\s+(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY)' "$log")
  # A target that did not build is a failure even when Bazel lists no test.
  if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi
  [ "$rc" -ne 0 ] && status=1
  echo "== $name: $pass passed, $fail failed (bazel exit $rc; $((SECONDS - start)) s; log $log)"
  # Each failed test by name, with the log Bazel kept for it.
  grep -E '^//\S+\s+(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY)' "$log" |
    awk '{print "   failed: " $1}' || true
  # And why: the failure lines of each kept log (CI shows only this output).
  grep -E '^\s+/\S+/test\.log$' "$log" | while read -r tl; do
    echo "   log: $tl"
    if [ -f "$tl" ]; then
      grep -E -A8 'Failure$|\[  FAILED  \]|ERROR: (Address|Thread|Undefined|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:|Check failed|terminate called' "$tl" |
        head -40 | sed 's/^/     | /'
    fi
  done || true
  total_pass=$((total_pass + pass))
  total_fail=$((total_fail + fail))
}

# Each stage prints its time; the README has the cold and warm figures.
# The default build compiles everything (examples, benchmarks, fuzz
# targets' sources); the sanitizer builds compile only what their tests
# run (--build_tests_only): the rest is the same code, built already.
run_config default //...
run_config asan --config=asan --build_tests_only //...
run_config tsan --config=tsan --test_tag_filters=tsan --build_tests_only //...
# The channel, fault and race suites again on the epoll loop (what a CQ
# thread runs where io_uring is refused): the default build's binaries, so
# nothing is rebuilt. uring_fallback_test checks the fallback itself.
run_config epoll --test_env=RINGRPC_POLLER=epoll //ringrpc/client:channel_test \
  //tests/faults:fault_test //tests/races:race_test //tests/races:caller_safety_test \
  //tests/races:shutdown_test
# The xDS scenarios with grpc-js-xds as the client: its npm
# packages first (npm ci from the registry, cached).
if modules=$(tests/xds/reference/run.sh --install 2> "$logdir/xds-reference-install.log"); then
  run_config xds-reference //tests/xds:reference_client_test \
    --test_env=RINGRPC_XDS_REFERENCE_NODE_MODULES="$modules"
else
  tail -20 "$logdir/xds-reference-install.log"
  echo "== xds-reference: 0 passed, 1 failed (npm packages not installed; log $logdir/xds-reference-install.log)"
  total_fail=$((total_fail + 1))
  status=1
fi

# A check that is not a Bazel test: one pass or one failure, its output in
# a log named after it.
run_check() {
  local name="$1"; shift
  local log="$logdir/$name.log"
  echo "== $name: $1 ..."
  local start=$SECONDS
  if "$@" > "$log" 2>&1; then
    echo "== $name: 1 passed, 0 failed ($((SECONDS - start)) s)"
    total_pass=$((total_pass + 1))
  else
    tail -20 "$log"
    echo "== $name: 0 passed, 1 failed ($((SECONDS - start)) s; log $log)"
    total_fail=$((total_fail + 1))
  fi
}

run_check layers tools/check-layers.sh
run_check format tools/check-format.sh
run_check version tools/check-version.sh
# Library targets only: the analysis is about the library's locks.
libs=$(bazel query --noshow_progress \
  'attr(testonly, 0, kind("cc_library", //ringrpc/base/... + //ringrpc/pool/... + //ringrpc/client/...))' 2>/dev/null)
run_check threadsafety bazel build --config=threadsafety $libs

# The two ways in for a user, each built and run as docs/user-guide.md says
# (check-recipes: the guide's blocks are these files verbatim): a Bazel
# workspace whose protos come from another repository, and a CMake project
# against ringrpc installed into a temporary prefix (plus pkg-config).
run_check recipes tools/check-recipes.sh
run_check external-workspace tests/external_workspace/run.sh
run_check cmake-sources tools/cmake-sources.sh --check
run_check cmake-consumer tests/cmake_consumer/run.sh

[ "$total_fail" -ne 0 ] && status=1
echo "== all: ${SECONDS} s"
echo "tests: $total_pass passed, $total_fail failed"
exit $status

#!/usr/bin/env bash
# The caller-side race suite (tests/races/race_test) for N minutes (default
# 30) with fresh seeds, in the default build and, with --asan / --tsan, under
# a sanitizer. Each run is RINGRPC_RACE_SECONDS long (default 60) with its
# own seed; a failure prints the seed and the command that replays it.
#   tools/races.sh [minutes] [--asan|--tsan]
# RINGRPC_POLLER=epoll in the environment runs it on the epoll loop.
# Ends with a line "races: R runs, F failed, C calls, X TryCancel, D
# channel destructions", then the short-lived channels and provoked ends
# and the rounds per channel feature, summed (docs/reliability.md).
set -uo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh >/dev/null || exit 1
minutes=${1:-30}
config=()
case "${2:-}" in
  --asan) config=(--config=asan) ;;
  --tsan) config=(--config=tsan) ;;
  "") ;;
  *) echo "usage: tools/races.sh [minutes] [--asan|--tsan]"; exit 2 ;;
esac
per_run=${RINGRPC_RACE_SECONDS:-60}
bazel build "${config[@]}" //tests/races:race_test //tests/server:test_server >/dev/null 2>&1 ||
  { echo "build failed"; exit 1; }
bin_dir=$(bazel info "${config[@]}" bazel-bin 2>/dev/null)
log_dir="${TMPDIR:-/tmp}/ringrpc-races"
rm -rf "$log_dir"
mkdir -p "$log_dir"
# A private copy of the binary and its runfiles: a build during the run
# (another bazel command) must not swap them underneath it.
# The layout is kept: the binary finds its libraries at
# $ORIGIN/../../_solib_k8 and the test server under its runfiles.
copy="$log_dir/bin"
mkdir -p "$copy/tests/races"
cp -rL "$bin_dir/_solib_k8" "$copy/" &&
  cp -rL "$bin_dir/tests/races/race_test.runfiles" "$copy/tests/races/" &&
  cp -L "$bin_dir/tests/races/race_test" "$copy/tests/races/" ||
  { echo "cannot copy the test binary and its runfiles"; exit 1; }
runfiles="$copy/tests/races/race_test.runfiles/ringrpc"
end=$(( $(date +%s) + minutes * 60 ))
runs=0; failed=0; calls=0; cancels=0; destructions=0; churned=0; provoked=0; flips=0; xds=0
declare -A features
while [ "$(date +%s)" -lt "$end" ]; do
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  log="$log_dir/run-$runs.log"
  # The helper daemons' directories (proxy, control plane) under the log's.
  mkdir -p "$log_dir/tmp-$runs"
  ( cd "$runfiles" && TEST_TMPDIR="$log_dir/tmp-$runs" RINGRPC_RACE_SEED=$seed RINGRPC_RACE_SECONDS=$per_run \
      timeout $(( per_run * 4 + 120 )) ../../race_test ) > "$log" 2>&1
  rc=$?
  if [ "$rc" -eq 126 ] || [ "$rc" -eq 127 ]; then echo "cannot run the test binary"; exit 1; fi
  runs=$((runs + 1))
  line=$(grep -E '^races:' "$log" | tail -1)
  echo "run $runs seed $seed rc $rc: ${line:-no summary}"
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
    echo "  FAILED (log $log); replay: RINGRPC_RACE_SEED=$seed RINGRPC_RACE_SECONDS=$per_run" \
         "bazel test ${config[*]} //tests/races:race_test --test_env=RINGRPC_RACE_SEED=$seed"
  fi
  n=$(sed -nE 's/.* ([0-9]+) calls .*/\1/p' <<<"$line"); calls=$((calls + ${n:-0}))
  n=$(sed -nE 's/.* ([0-9]+) TryCancel.*/\1/p' <<<"$line"); cancels=$((cancels + ${n:-0}))
  n=$(sed -nE 's/.* ([0-9]+) channel destructions.*/\1/p' <<<"$line")
  destructions=$((destructions + ${n:-0}))
  n=$(sed -nE 's/.* ([0-9]+) short-lived channels.*/\1/p' <<<"$line"); churned=$((churned + ${n:-0}))
  n=$(sed -nE 's/.* ([0-9]+) health flips.*/\1/p' <<<"$line"); flips=$((flips + ${n:-0}))
  n=$(sed -nE 's/.* ([0-9]+) xDS updates.*/\1/p' <<<"$line"); xds=$((xds + ${n:-0}))
  n=$(sed -nE 's/^provoked ends[^:]*: ([0-9]+)$/\1/p' "$log"); provoked=$((provoked + ${n:-0}))
  # "rounds per channel feature: name n; name n; ...": summed per name.
  while IFS= read -r pair; do
    name=${pair% *}; n=${pair##* }
    features[$name]=$(( ${features[$name]:-0} + n ))
  done < <(sed -nE 's/^rounds per channel feature: //p' "$log" | tr ';' '\n' |
           sed -E 's/^ +//; /^$/d')
done
echo "races: $runs runs, $failed failed, $calls calls, $cancels TryCancel, $destructions channel destructions"
echo "  $churned short-lived channels, $provoked provoked ends, $flips health flips, $xds xDS updates"
summary="  rounds per channel feature:"
for name in "${!features[@]}"; do summary+=" $name ${features[$name]};"; done
echo "$summary"
[ "$failed" -eq 0 ]

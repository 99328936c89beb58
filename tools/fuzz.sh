#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang and fuzzes each for N
# seconds (default 60), starting from its committed seed corpus. New inputs
# go to .fuzz-out/<target>/ (not committed); a crash leaves crash-* files
# there: turn each into a named regression input under the target's corpus.
# Usage: tools/fuzz.sh [seconds] [target...]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
secs="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(//ringrpc/pool:pool_fuzzer //ringrpc/client/transport:server_bytes_fuzzer
           //ringrpc/client/transport:framing_fuzzer //ringrpc/client/channel:target_fuzzer
           //ringrpc/client/channel:channel_args_fuzzer)
fi
declare -A corpus=(
  [//ringrpc/pool:pool_fuzzer]=ringrpc/pool/fuzz_corpus
  [//ringrpc/client/transport:server_bytes_fuzzer]=ringrpc/client/transport/fuzz_corpus
  [//ringrpc/client/transport:framing_fuzzer]=ringrpc/client/transport/framing_corpus
  [//ringrpc/client/channel:target_fuzzer]=ringrpc/client/channel/target_corpus
  [//ringrpc/client/channel:channel_args_fuzzer]=ringrpc/client/channel/args_corpus
)
for t in "${targets[@]}"; do
  bazel build --config=fuzz "$t"
  bin="bazel-bin/${t#//}"; bin="${bin/://}"
  name="$(basename "$bin")"
  out=".fuzz-out/$name"
  mkdir -p "$out/corpus"
  cp -n "${corpus[$t]}"/* "$out/corpus/" 2>/dev/null || true
  echo "fuzzing $t for ${secs}s"
  (cd "$out" && "$OLDPWD/$bin" -max_total_time="$secs" -print_final_stats=1 corpus)
done

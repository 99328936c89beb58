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
  targets=(//pool:pool_fuzzer //client/transport:server_bytes_fuzzer
           //client/transport:framing_fuzzer //client/channel:target_fuzzer
           //client/channel:channel_args_fuzzer)
fi
declare -A corpus=(
  [//pool:pool_fuzzer]=pool/fuzz_corpus
  [//client/transport:server_bytes_fuzzer]=client/transport/fuzz_corpus
  [//client/transport:framing_fuzzer]=client/transport/framing_corpus
  [//client/channel:target_fuzzer]=client/channel/target_corpus
  [//client/channel:channel_args_fuzzer]=client/channel/args_corpus
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

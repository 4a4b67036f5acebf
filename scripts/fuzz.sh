#!/usr/bin/env bash
# Runs each libFuzzer target (tests/fuzz, built by scripts/asan-build.sh in build-asan:
# clang, ASan + UBSan) for a bounded time. Any crash, sanitizer report, leak, timeout
# (10 s per input) or allocation over 2 GiB fails the run; the input that caused it is
# saved in build-asan/fuzz-artifacts/ (reproduce: build-asan/tests/fuzz/TARGET FILE).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]   (default: 25 s, every target)
# Fuzz longer, e.g. an hour on the .npy reader: scripts/fuzz.sh 3600 fuzz_npy
# New interesting inputs accumulate in build-asan/fuzz-corpus/TARGET (kept between runs).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-25}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_npy fuzz_npz fuzz_mask fuzz_settings fuzz_bundle fuzz_attention_bundle fuzz_model fuzz_safetensors fuzz_hf_config fuzz_tokenizer_json fuzz_gguf fuzz_cli)

scripts/asan-build.sh "${targets[@]}"

export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
failed=()
for target in "${targets[@]}"; do
  corpus=build-asan/fuzz-corpus/$target
  mkdir -p "$corpus" build-asan/fuzz-artifacts
  log=build-asan/$target.fuzz.log
  echo "fuzz: $target for ${seconds} s"
  if build-asan/tests/fuzz/"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix=build-asan/fuzz-artifacts/"$target"- -print_final_stats=1 \
       "$corpus" tests/fuzz/corpus/"$target" </dev/null >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^Done" "$log" | tr '\n' ' '; echo
  else
    echo "fuzz: $target FAILED; the end of $log:" >&2
    tail -n 40 "$log" >&2
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]} (inputs in build-asan/fuzz-artifacts/)" >&2
  exit 1
fi
echo "fuzz: every target ran ${seconds} s clean"

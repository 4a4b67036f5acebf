#!/usr/bin/env bash
# The core, figure and CLI tests again under AddressSanitizer + UBSan (build-asan, see
# scripts/asan-build.sh): any sanitizer report or leak stops the test that hit it
# (halt_on_error). The GUI tests run in the release build only (scripts/run-tests.sh):
# llvmpipe under ASan is too slow for CI's budget.
# Usage: scripts/run-sanitized-tests.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/asan-build.sh
scripts/llama-cpp-reference.sh build-asan >/dev/null  # the GGUF tests' references (npm's cache first)
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
# Also left to the release build, for CI's budget: the GGUF tokenizer's ids against llama.cpp's
# (107 s under ASan) and the new families' GGUF files (llama.cpp's converter and node-llama-cpp
# for most of their time); the GGUF reading, dequantization and runtime run sanitized in
# cli_test_gguf_model and fuzz_gguf.
cd build-asan && ctest --output-on-failure -j"$(nproc)" -E '^gui_|^cli_test_gguf_tokenizer$|^cli_test_gguf_families$' "$@"

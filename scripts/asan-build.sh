#!/usr/bin/env bash
# The one sanitizer build, shared by scripts/run-sanitized-tests.sh and scripts/fuzz.sh:
# clang with AddressSanitizer + UBSan (-fno-sanitize-recover: any report aborts) and
# libFuzzer's coverage (-DATTNSCOPE_FUZZ=ON), in build-asan/. Builds the targets given
# (default: all: the app, the tests and the fuzz targets).
# Usage: scripts/asan-build.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test --fuzz
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DATTNSCOPE_FUZZ=ON -DATTNSCOPE_BUILD_BENCHMARKS=OFF >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build-asan -j"$(nproc)" --target "$@"
else
  cmake --build build-asan -j"$(nproc)"
fi

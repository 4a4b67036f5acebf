#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds attnscope and runs every test, in three phases:
#   release    the release build (build/) and the whole suite: core, figure, CLI, GUI under Xvfb
#   sanitized  the suite again under AddressSanitizer + UBSan, halt_on_error, in build-asan/
#              (scripts/run-sanitized-tests.sh)
#   fuzz       each libFuzzer target for ATTNSCOPE_FUZZ_SECONDS (default 20) s: any crash,
#              sanitizer report, leak or timeout fails (scripts/fuzz.sh)
# The release phase runs first; every phase runs even when an earlier one failed, and any
# failed phase fails the whole run. ATTNSCOPE_TEST_PHASES picks fewer, e.g. "release".
set -uo pipefail
cd "$(dirname "$0")/.."
phases=${ATTNSCOPE_TEST_PHASES:-release sanitized fuzz}
for phase in $phases; do
  case "$phase" in
    release | sanitized | fuzz) ;;
    *) echo "run-tests.sh: unknown phase '$phase' in ATTNSCOPE_TEST_PHASES (release, sanitized, fuzz)" >&2; exit 2 ;;
  esac
done

deps=(--test)
[[ " $phases " == *" sanitized "* || " $phases " == *" fuzz "* ]] && deps+=(--fuzz)
scripts/install-deps.sh "${deps[@]}" || exit 1

run_release() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build build -j"$(nproc)" &&
    scripts/llama-cpp-reference.sh build >/dev/null &&
    (cd build && ctest --output-on-failure -j"$(nproc)")
}

# cpu: CPU seconds (user + sys) used so far by the processes this script waited for, i.e. the
# work a phase did whatever else the machine ran (its wall time is at least that / nproc).
# Not in $(...): `times` must run in this shell.
cpu_now() {
  local t
  t=$(mktemp)
  times >"$t"
  cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$t")
  rm -f "$t"
}

failed=()
summary=()
for phase in $phases; do
  echo "==== run-tests.sh: phase $phase ($(date -u +%H:%M:%S))"
  start=$SECONDS
  cpu_now
  cpu_start=$cpu
  case "$phase" in
    release) run_release ;;
    sanitized) scripts/run-sanitized-tests.sh ;;
    fuzz) scripts/fuzz.sh "${ATTNSCOPE_FUZZ_SECONDS:-20}" ;;
  esac
  status=$?
  [ $status -eq 0 ] && result=passed || { result="FAILED (exit $status)"; failed+=("$phase"); }
  cpu_now
  summary+=("$phase: $result in $((SECONDS - start)) s (CPU $((cpu - cpu_start)) s, load $(cut -d' ' -f1-3 /proc/loadavg))")
  echo "==== run-tests.sh: ${summary[-1]}"
done
echo "==== run-tests.sh summary"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-tests.sh: FAILED phases: ${failed[*]}" >&2
  exit 1
fi
echo "run-tests.sh: every phase passed"

#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test of the default run:
#   1. the full build (GCC, RelWithDebInfo) with all tests: unit, component (the agent on the simulator),
#      integration (real Prometheus, Alertmanager, Slurm on loopback), golden files, fuzz-corpus replays,
#      format check; a skip that tests/expected-skips.txt does not list fails the run;
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build (GCC) of the unit tests, the fuzz-corpus
#      replays and the agent end to end (label `agent`: the component tests that run the binary);
#   3. a ThreadSanitizer build with clang, which also checks the thread-safety annotations
#      (-Wthread-safety, src/core/mutex.h), of the unit tests and the agent end to end;
#   4. clang-tidy with the committed .clang-tidy over every product source (src/, sim/).
# Prints CTest's summary line for each run. Long fuzzing and benchmarks are separate: bench/run.sh,
# bench/fuzz.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
jobs=$(nproc)
status=0

# run_ctest DIR ARGS...: CTest in DIR, its output kept in DIR/ctest.log.
run_ctest() {
  local dir=$1
  shift
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@" 2>&1 | tee "$dir/ctest.log") || status=1
}

echo "== build (GCC, RelWithDebInfo) =="
"$root/scripts/build.sh" "$root/build" -DGPUSCOPE_BENCH=ON
echo "== tests =="
run_ctest "$root/build" --timeout 300
"$root/.venv/bin/python3" "$root/tests/tools/check_skips.py" "$root/build/ctest.log" "$root/tests/expected-skips.txt" ||
  status=1

echo "== build (GCC, ASan+UBSan) =="
"$root/scripts/build.sh" "$root/build-asan" -DGPUSCOPE_SANITIZE=ON -DGPUSCOPE_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
echo "== tests under ASan+UBSan =="
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest "$root/build-asan" --timeout 600 -L 'unit|fuzz-replay|agent'

echo "== build (clang, ThreadSanitizer, -Wthread-safety) =="
CC=clang CXX=clang++ "$root/scripts/build.sh" "$root/build-tsan" -DGPUSCOPE_TSAN=ON -DGPUSCOPE_BENCH=OFF
echo "== tests under ThreadSanitizer =="
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
run_ctest "$root/build-tsan" --timeout 600 -L 'unit|agent'

echo "== clang-tidy =="
"$root/scripts/clang-tidy.sh" "$root/build-tsan" || status=1

exit $status

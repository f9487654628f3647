#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test of the default run:
#   1. the full build (RelWithDebInfo) with all tests: unit, component (agent on the simulator),
#      integration (real Prometheus on loopback), golden files, fuzz-corpus replays, format check;
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build of the unit and component tests.
# Prints CTest's summary line for each. Long fuzzing and benchmarks are separate: bench/run.sh, bench/fuzz.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
jobs=$(nproc)

echo "== build (RelWithDebInfo) =="
"$root/scripts/build.sh" "$root/build" -DGPUSCOPE_BENCH=ON
echo "== tests =="
status=0
(cd "$root/build" && ctest --output-on-failure -j"$jobs" --timeout 300) || status=1

echo "== build (ASan+UBSan) =="
"$root/scripts/build.sh" "$root/build-asan" -DGPUSCOPE_SANITIZE=ON -DGPUSCOPE_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
echo "== tests under ASan+UBSan =="
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd "$root/build-asan" && ctest --output-on-failure -j"$jobs" --timeout 600 -L 'unit|fuzz-replay') || status=1

exit $status

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
#
# scripts/test.sh --long runs instead only the long tests (CTest label `long`: real-time outages and soaks
# of tens of minutes, which the default run leaves out to stay within 30 minutes) on the GCC build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
long=false
for arg in "$@"; do
  case $arg in
    --long) long=true ;;
    *)
      echo "usage: scripts/test.sh [--long]" >&2
      exit 2
      ;;
  esac
done
"$root/scripts/install-deps.sh"
jobs=$(nproc)
status=0

summary=()

# failed_tests LOG: the names CTest listed as failed at the end of LOG, one line.
failed_tests() {
  sed -n '/^The following tests FAILED:/,$p' "$1" | sed -n 's/^[[:space:]]*[0-9]* - \(.*\)$/\1/p' | tr '\n' ' '
}

# run_ctest NAME DIR ARGS...: CTest in DIR, its output kept in DIR/ctest.log. Tests that fail are run once
# more, alone (DIR/ctest-rerun.log): these 2-core machines are shared and a test that waits on real
# daemons can lose a race under load. A test that passes on the rerun is named in the summary as flaky; one
# that fails twice fails the run.
run_ctest() {
  local name=$1 dir=$2
  shift 2
  if (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@" 2>&1 | tee "$dir/ctest.log"); then
    summary+=("$name: $(grep -E '^[0-9]+% tests passed' "$dir/ctest.log")")
    return
  fi
  local failed
  failed=$(failed_tests "$dir/ctest.log")
  echo "== $name: rerunning the failed tests once, alone: $failed=="
  if (cd "$dir" && ctest --output-on-failure --rerun-failed "$@" 2>&1 | tee "$dir/ctest-rerun.log"); then
    summary+=("$name: passed; FLAKY (failed, then passed alone): $failed")
  else
    summary+=("$name: FAILED twice: $(failed_tests "$dir/ctest-rerun.log")")
    status=1
  fi
}

echo "== build (GCC, RelWithDebInfo) =="
"$root/scripts/build.sh" "$root/build" -DGPUSCOPE_BENCH=ON
if $long; then
  echo "== long tests (label long) =="
  run_ctest "GCC long" "$root/build" --timeout 3600 -L long
  echo "== summary =="
  printf '%s\n' "${summary[@]}"
  exit $status
fi
echo "== tests =="
run_ctest "GCC" "$root/build" --timeout 300 -LE long
if ! skips=$("$root/.venv/bin/python3" "$root/tests/tools/check_skips.py" "$root/build/ctest.log" \
  "$root/tests/expected-skips.txt"); then
  status=1
fi
echo "$skips"
summary+=("GCC skips: ${skips//$'\n'/; }")

echo "== build (GCC, ASan+UBSan) =="
"$root/scripts/build.sh" "$root/build-asan" -DGPUSCOPE_SANITIZE=ON -DGPUSCOPE_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
echo "== tests under ASan+UBSan =="
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0
run_ctest "ASan+UBSan" "$root/build-asan" --timeout 600 -L 'unit|fuzz-replay|agent'

echo "== build (clang, ThreadSanitizer, -Wthread-safety) =="
CC=clang CXX=clang++ "$root/scripts/build.sh" "$root/build-tsan" -DGPUSCOPE_TSAN=ON -DGPUSCOPE_BENCH=OFF
echo "== tests under ThreadSanitizer =="
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
run_ctest "TSan" "$root/build-tsan" --timeout 600 -L 'unit|agent'

echo "== clang-tidy =="
if "$root/scripts/clang-tidy.sh" "$root/build-tsan"; then
  summary+=("clang-tidy: clean")
else
  summary+=("clang-tidy: FINDINGS (above)")
  status=1
fi

# The end of the output is what a CI page shows: say there what every part did.
echo "== summary =="
printf '%s\n' "${summary[@]}"
exit $status

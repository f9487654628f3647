#!/usr/bin/env bash
# Long fuzzing, behind its own command (the default test run only replays the committed corpora):
# builds every fuzz target with clang + libFuzzer + ASan/UBSan into build-fuzz/ and runs each for
# $1 seconds (default 60), keeping new corpus entries in a scratch folder and crashes in bench/results/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
"$root/scripts/install-deps.sh"
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DGPUSCOPE_FUZZ=ON -DGPUSCOPE_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=$(ninja -C "$root/build-fuzz" -t targets all | grep -oE '^[a-z_]+_fuzz(:|$)' | tr -d : | sort -u)
ninja -C "$root/build-fuzz" $targets
mkdir -p "$root/bench/results/fuzz"
for t in $targets; do
  bin=$(find "$root/build-fuzz" -type f -name "$t" -perm -u+x | head -1)
  corpus=$(ls -d "$root"/tests/fuzz/corpus/* | while read -r d; do
             case "$t" in *"$(basename "$d")"*) echo "$d";; esac; done | head -1)
  scratch=$(mktemp -d)
  echo "== $t ($seconds s, seeds: ${corpus:-none})"
  "$bin" -max_total_time="$seconds" -artifact_prefix="$root/bench/results/fuzz/$t-" "$scratch" ${corpus:+"$corpus"} \
    2>&1 | tail -3
  rm -rf "$scratch"
done

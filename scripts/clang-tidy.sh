#!/usr/bin/env bash
# clang-tidy with the committed .clang-tidy over every product source (src/, sim/, plugins/), using the compile
# commands of a clang build tree ($1, default build-tsan, which scripts/test.sh makes). Any finding fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build-tsan}
[ -f "$dir/compile_commands.json" ] || { echo "clang-tidy: no $dir/compile_commands.json (build it first)" >&2; exit 1; }
cd "$root"
mapfile -t files < <(git ls-files 'src/*.cc' 'sim/*.cc' 'plugins/*.cc')
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run-clang-tidy -quiet -p "$dir" -j "$(nproc)" "${files[@]/#/$root/}" 2>&1 | sed "s/\x1b\[[0-9;]*m//g" >"$out" || true
if grep -qE '(warning|error):' "$out"; then
  grep -E -A3 '(warning|error):' "$out" | head -200
  echo "clang-tidy: $(grep -cE '(warning|error):' "$out") findings in ${#files[@]} files"
  exit 1
fi
echo "clang-tidy: ${#files[@]} files, no findings"

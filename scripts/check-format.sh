#!/usr/bin/env bash
# Fails when a tracked C++ file is not formatted as .clang-format says. Fix with:
#   git ls-files '*.cc' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.h' 2>/dev/null || true)
[ -n "$files" ] || { echo "check-format: no tracked C++ files"; exit 1; }
echo "$files" | xargs clang-format --dry-run --Werror
echo "check-format: $(echo "$files" | wc -l) files formatted"

#!/usr/bin/env bash
# Configures and builds gpuscope into build/ (or $1). Extra arguments go to cmake. The test helpers run on
# the project's virtual environment (.venv, made by scripts/install-deps.sh); ccache, when present, keeps
# rebuilds of the several build trees of the test run short.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
shift || true
args=()
[ -x "$root/.venv/bin/python3" ] && args+=("-DPython3_EXECUTABLE=$root/.venv/bin/python3")
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$root"
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$root" -B "$dir" -G Ninja "${args[@]}" "$@" >/dev/null
ninja -C "$dir" -j"$(nproc)"

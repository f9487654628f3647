#!/usr/bin/env bash
# The main job: installs what is missing, builds, and starts the demo stack (scripts/demo.sh): a simulated
# fleet of GPU nodes, Prometheus with the mixin's rules and Alertmanager with its routes, on loopback.
# Usage: scripts/run.sh [demo options: --fleet [N], --fast, --speed N, --alerts-after S, --once]   Stop with Ctrl-C.
#        scripts/run.sh --single [scenario.yaml] [extra agent flags...]
#          one gpuscope-agent on a simulated 8-GPU node on :9400 (scripts/single.sh; default the H100
#          scenario with XIDs, an ECC error and a GPU off the bus, so that the event path has lines too).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build" -DGPUSCOPE_BENCH=OFF

if [ "${1:-}" = "--single" ]; then
  shift
  exec "$root/scripts/single.sh" --build "$root/build" "$@"
fi
exec "$root/scripts/demo.sh" --build "$root/build" "$@"

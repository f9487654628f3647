#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs gpuscope-agent on a simulated 8-GPU H100
# training node (the simulator stands in for libnvidia-ml.so.1, so the agent's real NVML path runs).
# Usage: scripts/run.sh [scenario.yaml] [extra agent flags...]   Stop with Ctrl-C.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build" -DGPUSCOPE_BENCH=OFF
scenario=${1:-$root/sim/scenarios/h100-training.yaml}
shift || true
address=${GPUSCOPE_LISTEN:-127.0.0.1:9400}
cat <<MSG

gpuscope-agent on a simulated node ($(basename "$scenario"))
  metrics:  http://$address/metrics      (try: curl -s http://$address/metrics | grep DCGM_FI_DEV_GPU_UTIL)
  health:   http://$address/healthz  ready: http://$address/readyz
  Ctrl-C stops it.

MSG
export GPUSCOPE_SIM_SCENARIO=$scenario
exec "$root/build/src/agent/gpuscope-agent" --nvml.library "$root/build/sim/libnvidia-ml.so.1" \
  --web.listen-address "$address" "$@"

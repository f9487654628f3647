#!/usr/bin/env bash
# The main job: installs what is missing, builds, and starts the demo stack (scripts/demo.sh): a simulated
# fleet of GPU nodes, Prometheus with the mixin's rules and Alertmanager with its routes, on loopback.
# Usage: scripts/run.sh [demo options: --fast, --speed N, --alerts-after S, --once]   Stop with Ctrl-C.
#        scripts/run.sh --single [scenario.yaml] [extra agent flags...]
#          one gpuscope-agent on a simulated 8-GPU node (default the H100 training scenario) on :9400.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build" -DGPUSCOPE_BENCH=OFF

if [ "${1:-}" != "--single" ]; then
  exec "$root/scripts/demo.sh" --build "$root/build" "$@"
fi
shift
scenario=${1:-$root/sim/scenarios/h100-training.yaml}
shift || true
address=${GPUSCOPE_LISTEN:-127.0.0.1:9400}
cat <<MSG

gpuscope-agent on a simulated node ($(basename "$scenario"))
  metrics:  http://$address/metrics      (try: curl -s http://$address/metrics | grep DCGM_FI_DEV_GPU_UTIL)
  health:   http://$address/healthz  ready: http://$address/readyz
  events:   the simulator's kernel log (XID lines) is tailed: curl -s http://$address/metrics | grep gpuscope_events_total
  Ctrl-C stops it.

MSG
# The simulator writes its XID lines to a kernel log the agent tails, so the event path runs too.
state=$(mktemp -d -t gpuscope-single.XXXXXX)
trap 'rm -rf "$state"' EXIT
export GPUSCOPE_SIM_SCENARIO=$scenario GPUSCOPE_SIM_KERNEL_LOG=$state/kern.log
: > "$state/kern.log"
"$root/build/src/agent/gpuscope-agent" --nvml.library "$root/build/sim/libnvidia-ml.so.1" \
  --web.listen-address "$address" --events.file "$state/kern.log" --events.state-dir "$state/events" "$@" ||
  status=$?
exit "${status:-0}"

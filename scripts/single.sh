#!/usr/bin/env bash
# One gpuscope-agent on a simulated 8-GPU node, from an existing build (scripts/run.sh --single builds first).
# The simulator writes its XID lines to a kernel log the agent tails, so the event path runs too. Ctrl-C
# stops the agent and removes the temporary files (the kernel log, the event state).
# Usage: scripts/single.sh [--build DIR] [scenario.yaml] [extra agent flags...]
#   --build DIR    build folder with gpuscope-agent and the simulator (default build/)
#   scenario.yaml  default sim/scenarios/h100-faults.yaml: application XIDs 13 and 31 at 30/45 s, a
#                  double-bit ECC error with XID 48 at 60 s, GPU 1 off the bus (XID 79) at 120 s
# Environment: GPUSCOPE_LISTEN (default 127.0.0.1:9400); GPUSCOPE_SIM_SPEED (simulated seconds per real
# second, default 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
case ${1:-} in
  --build) build=$(cd "$2" && pwd); shift 2 ;;
  --build=*) build=$(cd "${1#--build=}" && pwd); shift ;;
esac
agent=$build/src/agent/gpuscope-agent
sim=$build/sim/libnvidia-ml.so.1
for f in "$agent" "$sim"; do
  [ -e "$f" ] || { echo "single: $f is missing; build first (scripts/run.sh --single builds and starts it)" >&2; exit 1; }
done
scenario=$root/sim/scenarios/h100-faults.yaml
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  scenario=$1
  shift
fi
[ -f "$scenario" ] || { echo "single: scenario $scenario not found" >&2; exit 1; }
address=${GPUSCOPE_LISTEN:-127.0.0.1:9400}

state=$(mktemp -d -t gpuscope-single.XXXXXX)
agent_pid=""
cleanup() {
  trap - EXIT
  # A second Ctrl-C while the agent stops must not leave the temporary files behind.
  set +e
  trap '' INT TERM
  if [ -n "$agent_pid" ]; then
    kill -TERM "$agent_pid" 2>/dev/null || true
    wait "$agent_pid" 2>/dev/null || true
  fi
  rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat <<MSG

gpuscope-agent on a simulated node ($(basename "$scenario"))
  metrics:  http://$address/metrics      (try: curl -s http://$address/metrics | grep DCGM_FI_DEV_GPU_UTIL)
  health:   http://$address/healthz  ready: http://$address/readyz
  events:   the simulator's kernel log (XID lines) is tailed:
            curl -s http://$address/metrics | grep -E 'gpuscope_events_total|gpuscope_xid_errors_total'
  Ctrl-C stops it.

MSG
export GPUSCOPE_SIM_SCENARIO=$scenario GPUSCOPE_SIM_KERNEL_LOG=$state/kern.log
: >"$state/kern.log"
# In the background, so that Ctrl-C reaches this script's trap, which stops the agent and cleans up.
"$agent" --nvml.library "$sim" --web.listen-address "$address" --events.file "$state/kern.log" \
  --events.state-dir "$state/events" "$@" &
agent_pid=$!
status=0
wait "$agent_pid" || status=$?
agent_pid=""
exit "$status"

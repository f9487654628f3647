#!/usr/bin/env bash
# The demo stack on loopback, from an existing build: a simulated GPU fleet (one gpuscope-agent per node,
# each on a shipped scenario with its own Hostname and Slurm job), Prometheus with the mixin's recording
# and alerting rules, Alertmanager with its routes and inhibitions, a webhook receiver that logs every
# notification, and, when the build found the OpenTelemetry Collector peer (scripts/build-peers.sh), a
# Collector receiving the training node's traces into a file. Prints the URLs, the notifications as they
# arrive and, after a few minutes, the firing alerts, the latest traced slow training step and `gpuscope job`'s
# report of the idle job 4104 (when the gpuscope command is built). Ctrl-C stops
# everything and removes the temporary files.
# Usage: scripts/demo.sh [--build DIR] [--fleet [N]] [--fast] [--speed N] [--alerts-after SECONDS] [--once]
#   --build DIR  build folder with gpuscope-agent and the simulator (default build/; scripts/run.sh builds it)
#   --fleet [N]  a larger demo: N more nodes (default 100) of sim/fleets/mixed.yaml from gpuscope-fleet,
#                one process running the agent's own code for each, with a churning job mix
#   --fast       the mixin with every for:/window shrunk to seconds (as the integration tests use it), so
#                that slow alerts (NVLink errors, idle allocated GPUs) fire within the first minute too
#   --speed N    simulated seconds per real second (default 10: the scenarios' faults fall within minutes)
# Needs: python3, prometheus, prometheus-alertmanager, jsonnet (scripts/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
fleet_nodes=""
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --build=*) build=$(cd "${1#--build=}" && pwd); shift ;;
    --fleet)
      fleet_nodes=100
      if [ $# -gt 1 ] && [[ $2 =~ ^[0-9]+$ ]]; then fleet_nodes=$2; shift; fi
      shift ;;
    --fleet=*) fleet_nodes=${1#--fleet=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
agent=$build/src/agent/gpuscope-agent
sim=$build/sim/libnvidia-ml.so.1
if [ -n "$fleet_nodes" ]; then
  [[ $fleet_nodes =~ ^[1-9][0-9]*$ ]] || { echo "demo: --fleet takes a number of nodes, got '$fleet_nodes'" >&2; exit 2; }
  runner=$build/sim/fleet/gpuscope-fleet
  [ -x "$runner" ] || { echo "demo: $runner is missing; build first (ninja -C $build gpuscope-fleet)" >&2; exit 1; }
  args+=(--fleet-runner "$runner" --fleet-nodes "$fleet_nodes")
fi
for f in "$agent" "$sim"; do
  [ -e "$f" ] || { echo "demo: $f is missing; build first (scripts/run.sh builds and starts the demo)" >&2; exit 1; }
done
for tool in prometheus prometheus-alertmanager; do
  command -v "$tool" >/dev/null || { echo "demo: $tool is missing; run scripts/install-deps.sh" >&2; exit 1; }
done
# The Collector the integration tests use, as the build's configure step found it (cmake/GpuscopePeers.cmake).
otelcol=$(sed -n 's/^GPUSCOPE_OTELCOL_BIN:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
[ -x "$otelcol" ] && args+=(--otelcol "$otelcol")
# Likewise the kubelet's pod-resources stand-in, for the Kubernetes node's pods.
podresources=$(sed -n 's/^GPUSCOPE_PODRESOURCES_BIN:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
[ -x "$podresources" ] && args+=(--podresources "$podresources")
# And the API-server stand-in: the pods' uids (which tie its GPU processes to pods), owners and team labels.
# The gpuscope command, when built: the demo prints the idle job's report with the firing alerts.
[ -x "$build/src/cli/gpuscope" ] && args+=(--gpuscope "$build/src/cli/gpuscope")
kubeapi=$(sed -n 's/^GPUSCOPE_KUBEAPI_BIN:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
[ -x "$kubeapi" ] && args+=(--kubeapi "$kubeapi")

# Every process of the stack and every temporary file lives under one process group and one folder.
tmp=$(mktemp -d -t gpuscope-demo.XXXXXX)
stack=""
cleanup() {
  trap - EXIT
  # A second Ctrl-C (or TERM) while the stack stops only cuts the wait short: the removal below always runs
  # (without errexit: a sleep interrupted by that Ctrl-C fails, and must not end the script here).
  set +e
  hurry=""
  trap 'hurry=1' INT TERM
  if [ -n "$stack" ] && kill -0 "$stack" 2>/dev/null; then
    kill -TERM -- "-$stack" 2>/dev/null || true
    # fleet.py stops its agents, Prometheus and Alertmanager itself; anything left after 20 s is killed.
    for _ in $(seq 200); do
      [ -z "$hurry" ] && kill -0 "$stack" 2>/dev/null || break
      sleep 0.1
    done
  fi
  if [ -n "$stack" ]; then
    # Children outlive the leader only when it was killed hard; the group id still names them. Wait until
    # the group is gone, so that none of them writes under $tmp while it is removed.
    kill -KILL -- "-$stack" 2>/dev/null || true
    wait "$stack" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 -- "-$stack" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# setsid: the stack gets its own process group (Ctrl-C reaches only this script, which stops the group).
python=python3; [ -x "$root/.venv/bin/python3" ] && python=$root/.venv/bin/python3
TMPDIR=$tmp setsid "$python" "$root/tests/integration/fleet.py" demo --agent "$agent" --sim "$sim" \
  --webhook-log "$tmp/webhook.log" ${args[@]+"${args[@]}"} &
stack=$!
wait "$stack"

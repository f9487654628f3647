#!/usr/bin/env bash
# The agent's CPU with remote_write on, against real receivers, next to the same agent without it, all in
# the same window (the agents run side by side, so the shared machine's load falls on all alike):
#   none:      no push;
#   vm-1.0:    remote_write 1.0 every 15 s to VictoriaMetrics (the peers build);
#   prom3-2.0: remote_write 2.0 every 15 s to Prometheus 3 (the peers build, remote-write receiver on);
#   prom3-2.0-1s: the same every second, which puts 15x the pushes in the window and so shows the cost
#                 of one push above the noise.
# Each agent runs the simulator's h100-training scenario with GPUS GPUs (9 by default: ~2,000 series, the
# issue's figure), default collectors. CPU is the sum of the agent's threads' run time
# (/proc/PID/task/*/schedstat, nanoseconds) over the window; samples are what the receiver acknowledged
# (gpuscope_remote_write_samples_sent_total); RSS is read at the end of the window. Writes a Markdown table
# to OUT. Not part of the test run.
# Usage: bench/remote_write_agent_cpu.sh [BUILD_DIR] [OUT.md] [WINDOW_SECONDS] [GPUS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/bench/results/remote_write_agent_cpu.md}
window=${3:-180}
gpus=${4:-9}
# shellcheck source=../scripts/versions.env
source "$root/scripts/versions.env"
peers=${GPUSCOPE_PEERS_CACHE:-$HOME/.cache/gpuscope/peers}
vm_bin=$peers/victoria-metrics-$VICTORIAMETRICS_VERSION/victoria-metrics
prom_bin=$peers/prometheus-$PROMETHEUS3_VERSION/prometheus
agent=$build/src/agent/gpuscope-agent
sim=$build/sim/libnvidia-ml.so.1
for f in "$vm_bin" "$prom_bin" "$agent" "$sim"; do
  [ -e "$f" ] || { echo "remote_write_agent_cpu: $f missing (scripts/install-deps.sh builds the peers)" >&2; exit 1; }
done
bench_name=remote_write_agent_cpu
# shellcheck source=lib.sh
source "$root/bench/lib.sh"
# Run time of every thread of PID, in nanoseconds.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s}'; }
sent() {
  curl -s "http://127.0.0.1:$1/metrics" |
    awk '/^gpuscope_remote_write_samples_sent_total[{ ]/ {s += $NF} END {printf "%d", s}'
}

vm_port=$(free_port)
"$vm_bin" -storageDataPath="$work/vm" -httpListenAddr="127.0.0.1:$vm_port" -loggerLevel=ERROR \
  >"$work/vm.log" 2>&1 &
pids+=($!)
prom_port=$(free_port)
printf 'global: {scrape_interval: 1m}\nscrape_configs: []\n' >"$work/prometheus.yml"
"$prom_bin" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address="127.0.0.1:$prom_port" --web.enable-remote-write-receiver --log.level=warn \
  >"$work/prometheus.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$vm_port/health"
wait_http "http://127.0.0.1:$prom_port/-/ready"

sed "s/^  count: 8$/  count: $gpus/" "$root/sim/scenarios/h100-training.yaml" >"$work/scenario.yaml"
names=(none vm-1.0 prom3-2.0 prom3-2.0-1s)
declare -A agent_pid agent_port
for name in "${names[@]}"; do
  port=$(free_port)
  args=(--nvml.library "$sim" --web.listen-address "127.0.0.1:$port" --events.state-dir "$work/state-$name")
  case $name in
    vm-1.0) args+=(--sink.remote-write.url "http://127.0.0.1:$vm_port/api/v1/write" --sink.remote-write.protocol 1.0) ;;
    prom3-2.0*) args+=(--sink.remote-write.url "http://127.0.0.1:$prom_port/api/v1/write" --sink.remote-write.protocol 2.0) ;;
  esac
  case $name in
    none) ;;
    *-1s) args+=(--sink.remote-write.interval 1s --sink.remote-write.external-label "bench=$name") ;;
    *) args+=(--sink.remote-write.interval 15s --sink.remote-write.external-label "bench=$name") ;;
  esac
  GPUSCOPE_SIM_SCENARIO=$work/scenario.yaml GPUSCOPE_SIM_KERNEL_LOG="" "$agent" "${args[@]}" \
    >"$work/agent-$name.log" 2>&1 &
  agent_pid[$name]=$!
  agent_port[$name]=$port
  pids+=($!)
done
for name in "${names[@]}"; do wait_http "http://127.0.0.1:${agent_port[$name]}/readyz"; done
sleep 20  # every collector has run, each pushing agent has sent its first batch
series=$(curl -s "http://127.0.0.1:${agent_port[none]}/metrics" | grep -vc '^#')

declare -A c0 s0
t0=$(date +%s.%N)
for name in "${names[@]}"; do
  c0[$name]=$(cpu_ns "${agent_pid[$name]}")
  s0[$name]=$(sent "${agent_port[$name]}")
done
sleep "$window"
declare -A c1 s1 rss
for name in "${names[@]}"; do
  c1[$name]=$(cpu_ns "${agent_pid[$name]}")
  rss[$name]=$(awk '$1 == "VmRSS:" {printf "%.1f", $2 / 1024}' "/proc/${agent_pid[$name]}/status")
done
t1=$(date +%s.%N)
sleep 6  # the sent counter is published every 5 s
for name in "${names[@]}"; do s1[$name]=$(sent "${agent_port[$name]}"); done
load=$(cut -d' ' -f1-3 /proc/loadavg)

# What the receivers hold: the series of the last push, per agent.
vm_series=$(curl -s "http://127.0.0.1:$vm_port/api/v1/query" --data-urlencode 'query=count({bench="vm-1.0"})' |
  python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
prom_series=$(curl -s "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode 'query=count({bench="prom3-2.0"})' |
  python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')

rows=$(for name in "${names[@]}"; do
  awk -v name="$name" -v c="$((c1[$name] - c0[$name]))" -v base="$((c1[none] - c0[none]))" \
    -v s="$((s1[$name] - s0[$name]))" -v t0="$t0" -v t1="$t1" -v rss="${rss[$name]}" 'BEGIN {
      pct = 100 * c / 1e9 / (t1 - t0)
      extra = c - base
      per = s > 0 ? sprintf("%.0f", extra / s) : "-"
      printf "| %s | %.3f %% | %.1f | %+.3f %% | %d | %s | %s |\n", name, pct, c / 1e6, 100 * extra / 1e9 / (t1 - t0), s, per, rss
    }'
done)
{
  echo "# Agent CPU with remote_write on vs off ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load average $load," \
    "gpuscope $(git -C "$root" rev-parse --short HEAD))"
  echo
  echo "Four agents side by side, each on the simulator's h100-training with $gpus GPUs ($series series on /metrics),"
  echo "default collectors (GPU every 1 s), over the same ${window} s window. CPU: run time of all the agent's threads."
  echo "Receivers: VictoriaMetrics $VICTORIAMETRICS_VERSION (1.0), Prometheus 3 ($PROMETHEUS3_VERSION, 2.0). Samples: what the"
  echo "receiver acknowledged in the window. \"vs none\" and \"ns per sample\" subtract the agent without push, so"
  echo "they carry the noise of two measurements (the machine is shared). After the run the receivers held"
  echo "$vm_series series from vm-1.0 and $prom_series from prom3-2.0."
  echo
  echo "| agent | CPU (% of one core) | CPU ms in window | vs none | samples sent | extra CPU ns per sample sent | RSS MiB at the end |"
  echo "|---|---|---|---|---|---|---|"
  echo "$rows"
} >"$out"
cat "$out"

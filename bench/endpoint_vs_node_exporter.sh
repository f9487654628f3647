#!/usr/bin/env bash
# Side-by-side benchmark, one run: gpuscope-agent on the simulator (8 GPUs) vs prometheus-node-exporter
# serving its own metrics, both on loopback, loaded with wrk. Reports requests/s, latency percentiles,
# series served and RSS, and the ratios measured in the same run. Not a test: figures go to
# bench/results/ and the notes. Usage: bench/endpoint_vs_node_exporter.sh [seconds] [connections]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
seconds=${1:-10}
connections=${2:-4}
threads=2
agent_port=19400
ne_port=19100
scenario=${SCENARIO:-$root/sim/scenarios/h100-training.yaml}

command -v wrk >/dev/null || { echo "wrk missing: scripts/install-deps.sh" >&2; exit 1; }
command -v prometheus-node-exporter >/dev/null || { echo "node exporter missing" >&2; exit 1; }

cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
pids=()
trap cleanup EXIT

GPUSCOPE_SIM_SCENARIO=$scenario "$build/src/agent/gpuscope-agent" --nvml.library "$build/sim/libnvidia-ml.so.1" \
  --web.listen-address 127.0.0.1:$agent_port --log.level warn &
pids+=($!)
agent_pid=$!
prometheus-node-exporter --web.listen-address=127.0.0.1:$ne_port --log.level=warn 2>/dev/null &
pids+=($!)
ne_pid=$!
for url in http://127.0.0.1:$agent_port/readyz http://127.0.0.1:$ne_port/metrics; do
  for _ in $(seq 100); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done
done
sleep 2  # a few collection cycles

series() { curl -s "$1" | grep -vc '^#'; }
rss_kib() { awk '/VmRSS/ {print $2}' /proc/"$1"/status; }
agent_series=$(series http://127.0.0.1:$agent_port/metrics)
ne_series=$(series http://127.0.0.1:$ne_port/metrics)

run_wrk() {  # url -> "rps p50_ms p99_ms"
  wrk -t$threads -c"$connections" -d"${seconds}s" --latency "$1" | awk '
    /Requests\/sec/ {rps=$2}
    /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
    function ms(v) { if (v ~ /us$/) return v/1000; if (v ~ /ms$/) return v+0; if (v ~ /s$/) return v*1000; return v }
    END {printf "%s %.3f %.3f\n", rps, ms(p50), ms(p99)}'
}
read -r agent_rps agent_p50 agent_p99 < <(run_wrk http://127.0.0.1:$agent_port/metrics)
read -r ne_rps ne_p50 ne_p99 < <(run_wrk http://127.0.0.1:$ne_port/metrics)
# gzip as Prometheus asks for it
read -r agent_gz_rps agent_gz_p50 agent_gz_p99 < <(wrk -t$threads -c"$connections" -d"${seconds}s" --latency \
  -H 'Accept-Encoding: gzip' http://127.0.0.1:$agent_port/metrics | awk '
    /Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
    function ms(v) { if (v ~ /us$/) return v/1000; if (v ~ /ms$/) return v+0; if (v ~ /s$/) return v*1000; return v }
    END {printf "%s %.3f %.3f\n", rps, ms(p50), ms(p99)}')
agent_rss=$(rss_kib $agent_pid)
ne_rss=$(rss_kib $ne_pid)

out=$root/bench/results/endpoint_vs_node_exporter.md
{
  echo "# /metrics side by side ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, wrk -t$threads -c$connections -d${seconds}s)"
  echo
  echo "| | series | req/s | p50 ms | p99 ms | RSS MiB |"
  echo "|---|---|---|---|---|---|"
  printf "| gpuscope-agent (8 simulated GPUs) | %s | %s | %s | %s | %.1f |\n" "$agent_series" "$agent_rps" "$agent_p50" "$agent_p99" "$(awk "BEGIN{print $agent_rss/1024}")"
  printf "| gpuscope-agent, gzip | %s | %s | %s | %s | |\n" "$agent_series" "$agent_gz_rps" "$agent_gz_p50" "$agent_gz_p99"
  printf "| prometheus-node-exporter 1.5 | %s | %s | %s | %s | %.1f |\n" "$ne_series" "$ne_rps" "$ne_p50" "$ne_p99" "$(awk "BEGIN{print $ne_rss/1024}")"
  echo
  printf "requests/s ratio (gpuscope / node_exporter): %.1fx\n" "$(awk "BEGIN{print $agent_rps/$ne_rps}")"
  echo
  echo "Not like for like: gpuscope-agent answers a scrape from the snapshot its collectors built off the"
  echo "request path (rendered once per snapshot and cached), while node_exporter runs its collectors, reading"
  echo "/proc and /sys, on every scrape. The ratio compares the cost of a scrape, not of collecting: the"
  echo "agent's collection work is measured apart (bench_gpu_collect, bench/README.md)."
} | tee "$out"

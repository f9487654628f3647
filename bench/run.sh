#!/usr/bin/env bash
# Runs every benchmark and writes the figures to bench/results/: the Google Benchmark micro-benchmarks,
# the side-by-side /metrics comparison with prometheus-node-exporter, remote_write next to Prometheus's
# own encoder and the agent's CPU while pushing, the event path end to end, and the training source's CPU
# and memory. Not part of the test run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build" -DGPUSCOPE_BENCH=ON
mkdir -p "$root/bench/results"
"$root/build/bench/bench_exposition" --benchmark_min_time=0.5 | tee "$root/bench/results/exposition.txt"
"$root/build/bench/bench_gpu_collect" --benchmark_min_time=2 | tee "$root/bench/results/gpu_collect.txt"
"$root/build/bench/bench_snapshot" --benchmark_min_time=0.5 | tee "$root/bench/results/snapshot.txt"
"$root/build/bench/bench_nccl_profiler" --benchmark_min_time=2 | tee "$root/bench/results/nccl_profiler.txt"
"$root/bench/remote_write_vs_prometheus.sh" "$root/build" "$root/bench/results/remote_write.txt"
"$root/bench/remote_write_agent_cpu.sh" "$root/build" "$root/bench/results/remote_write_agent_cpu.md"
"$root/bench/agent_footprint.sh" "$root/build"
"$root/bench/endpoint_vs_node_exporter.sh" "${SECONDS_PER_RUN:-10}" 4
"$root/bench/events_path.sh"
"$root/bench/training_agent_cost.sh" "$root/build"

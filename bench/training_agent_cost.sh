#!/usr/bin/env bash
# What the training source costs the agent (issue 12's benchmarks), written as a Markdown report to OUT:
#  1. CPU per 10,000 records/s: three agents side by side on the simulator's h100-training scenario with
#     --collector.training, over the same WINDOW seconds (so the shared machine's load falls on all alike):
#     idle (nobody sends), 10k (bench/training_load.py sends 10,000 records/s from RANKS fake ranks), 50k
#     (50,000 records/s). CPU: utime + stime of /proc/PID/stat (all the agent's threads) over the window;
#     the figure per 10k records/s subtracts the idle agent and divides by the records the agent was sent
#     (a datagram its full receive buffer refused is counted as dropped, not as load).
#  2. Memory per rank: for 1, 64 and 512 ranks, a fresh agent's RSS (/proc/PID/status VmRSS) before and
#     after every rank filled its windows (4,200 completed collectives on two communicators, 350 steps:
#     past the 4,096 collectives and 20 steps a rank keeps), after two collection cycles; bytes per rank =
#     the growth / ranks.
# Not part of the test run.
# Usage: bench/training_agent_cost.sh [BUILD_DIR] [OUT.md] [WINDOW_SECONDS] [RANKS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/bench/results/training_agent_cost.md}
window=${3:-60}
load_ranks=${4:-8}
agent=$build/src/agent/gpuscope-agent
sim=$build/sim/libnvidia-ml.so.1
load="$root/bench/training_load.py"
for f in "$agent" "$sim"; do
  [ -e "$f" ] || { echo "training_agent_cost: $f missing (build first)" >&2; exit 1; }
done
bench_name=training_agent_cost
# shellcheck source=lib.sh
source "$root/bench/lib.sh"
# utime + stime of PID (every thread), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kib() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
metric() {  # the sum of a family's samples on an agent's /metrics
  curl -s "http://127.0.0.1:$1/metrics" |
    awk -v name="$2" '$1 == name || index($1, name "{") == 1 {s += $NF} END {printf "%d", s}'
}
# Starts an agent named $1 with the training collector; sets started_pid, started_port.
start_agent() {
  local name=$1 port
  port=$(free_port)
  GPUSCOPE_SIM_SCENARIO="$root/sim/scenarios/h100-training.yaml" GPUSCOPE_SIM_KERNEL_LOG="" "$agent" \
    --nvml.library "$sim" --web.listen-address "127.0.0.1:$port" --events.state-dir "$work/state-$name" \
    --collector.training --training.socket "$work/$name.sock" >"$work/agent-$name.log" 2>&1 &
  started_pid=$!
  started_port=$port
  pids+=("$started_pid")
  wait_http "http://127.0.0.1:$port/readyz"
  for _ in $(seq 100); do [ -S "$work/$name.sock" ] && return 0; sleep 0.1; done
  echo "training_agent_cost: $name's training socket never appeared" >&2
  return 1
}
# The load driver runs without the launcher variables of this shell: the agent takes the ranks it claims.
driver() { env -u RANK -u SLURM_PROCID -u SLURM_JOB_ID -u GPUSCOPE_JOB_ID python3 "$load" "$@"; }

hz=$(getconf CLK_TCK)
names=(idle 10k 50k)
declare -A rate=([idle]=0 [10k]=10000 [50k]=50000) apid aport
for name in "${names[@]}"; do
  start_agent "$name"
  apid[$name]=$started_pid
  aport[$name]=$started_port
done
sleep 10  # every collector has run once
declare -A c0 c1 d0 d1 result
t0=$(date +%s.%N)
for name in "${names[@]}"; do
  c0[$name]=$(cpu_ticks "${apid[$name]}")
  d0[$name]=$(metric "${aport[$name]}" gpuscope_training_datagrams_total)
done
driver_pids=()
for name in 10k 50k; do
  driver "$work/$name.sock" --ranks "$load_ranks" --rate "${rate[$name]}" --seconds "$window" \
    >"$work/driver-$name.json" &
  driver_pids+=($!)
done
sleep "$window"
for name in "${names[@]}"; do c1[$name]=$(cpu_ticks "${apid[$name]}"); done
t1=$(date +%s.%N)
for pid in "${driver_pids[@]}"; do wait "$pid"; done
sleep 6  # the training collector publishes every 5 s
for name in "${names[@]}"; do d1[$name]=$(metric "${aport[$name]}" gpuscope_training_datagrams_total); done
load_avg=$(cut -d' ' -f1-3 /proc/loadavg)

cpu_rows=$(for name in "${names[@]}"; do
  sent=0 dropped=0
  if [ -f "$work/driver-$name.json" ]; then
    sent=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["records"])' "$work/driver-$name.json")
    dropped=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dropped"])' "$work/driver-$name.json")
  fi
  awk -v name="$name" -v c="$((c1[$name] - c0[$name]))" -v base="$((c1[idle] - c0[idle]))" -v hz="$hz" \
    -v t0="$t0" -v t1="$t1" -v rate="${rate[$name]}" -v sent="$sent" -v dropped="$dropped" \
    -v datagrams="$((d1[$name] - d0[$name]))" 'BEGIN {
      secs = t1 - t0
      pct = 100 * c / hz / secs
      extra = 100 * (c - base) / hz / secs
      per = sent > 0 ? sprintf("%.2f %%", extra / (sent / secs / 10000)) : "-"
      printf "| %s | %d | %.0f | %d | %d | %.2f %% | %+.2f %% | %s |\n", name, rate, sent / secs, dropped,
        datagrams, pct, extra, per
    }'
done)
for name in "${names[@]}"; do kill "${apid[$name]}"; wait "${apid[$name]}" 2>/dev/null || true; done

# 2. Memory per rank.
mem_rows=""
for ranks in 1 64 512; do
  start_agent "mem$ranks"
  sleep 12  # two collection cycles: the baseline includes what the first ones allocate
  before=$(rss_kib "$started_pid")
  filled=$(driver "$work/mem$ranks.sock" --ranks "$ranks" --fill 4200)
  sleep 12  # two collection cycles render the ranks (the agent gives freed pages back after each)
  after=$(rss_kib "$started_pid")
  held=$(metric "$started_port" gpuscope_training_ranks)
  mem_rows+=$(awk -v ranks="$ranks" -v before="$before" -v after="$after" -v held="$held" \
    -v records="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["records"])' "$filled")" 'BEGIN {
      printf "| %d | %d | %d | %.1f | %.1f | %.0f |\n", ranks, held, records, before / 1024, after / 1024,
        (after - before) * 1024 / ranks
    }')$'\n'
  kill "$started_pid"
  wait "$started_pid" 2>/dev/null || true
done

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
cat >"$out" <<EOF
# Agent cost of the training source ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load average $load_avg, gpuscope $commit)

Written by \`bench/training_agent_cost.sh\` (the load: \`bench/training_load.py\`). Each agent runs the simulator's
h100-training scenario (8 GPUs, default collectors) with \`--collector.training\`.

## CPU per 10,000 records/s

Three agents side by side over the same ${window} s window; the load comes from ${load_ranks} fake ranks of one
process, each rank's stream as the NCCL plugin and the Python package send it (an entry and a completion
record per collective, a step record every 12 collectives, 100 records a datagram, sent without blocking).
CPU: utime + stime of the agent (all threads) over the window. "vs idle" subtracts the agent nobody sends
to, so it carries the noise of two measurements on a shared machine; "per 10k records/s" divides it by the
records/s the agent took (sent; "dropped" are datagrams its full receive buffer refused, the producers'
non-blocking send: on this shared machine the agent's receive thread is sometimes not scheduled for long
enough to fill its 4 MiB buffer).

| agent | records/s asked | records/s sent | records dropped (agent's buffer full) | datagrams counted by the agent | CPU (% of one core) | vs idle | per 10k records/s |
|---|---|---|---|---|---|---|---|
$cpu_rows

## Memory per rank

A fresh agent per row; RSS before and after every rank filled its windows (4,200 completed collectives on
two communicators and 350 steps each: a rank keeps the last 4,096 collectives and 20 steps), both after
two collection cycles. "ranks held" is \`gpuscope_training_ranks\`.

| ranks | ranks held | records sent | RSS before (MiB) | RSS after (MiB) | bytes per rank |
|---|---|---|---|---|---|
$mem_rows
EOF
echo "training_agent_cost: wrote $out"

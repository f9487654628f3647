#!/usr/bin/env bash
# The agent's own footprint on a simulated node, at 8, 16 and 72 GPUs (the shipped scenarios
# h100-training, h100-16gpu-training and h200-nvl72-training; default collectors, default 1 s GPU
# interval): CPU share of one core while idle (one gzip scrape every 15 s, as Prometheus does), the
# simulator's part of it (perf samples in libnvidia-ml.so.1), RSS idle and after a load of scrapes,
# threads, series, and scrape latency percentiles under `wrk -c4`; then the threads by role (gdb's
# backtrace of each thread, after the load) and the machine's load average beside the run. Writes two
# Markdown tables. Not part of the test run.
# Usage: bench/agent_footprint.sh [BUILD_DIR] [OUT.md] [IDLE_SECONDS] [LOAD_SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/bench/results/agent_footprint.md}
idle_s=${3:-30}
load_s=${4:-10}
agent=$build/src/agent/gpuscope-agent
sim=$build/sim/libnvidia-ml.so.1
for tool in perf wrk curl gdb; do
  command -v "$tool" >/dev/null || { echo "agent_footprint: $tool missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
work=$(mktemp -d -t gpuscope-footprint.XXXXXX)
agent_pid=""
cleanup() {
  [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
ticks=$(getconf CLK_TCK)
port=19417

# cpu_ticks PID: utime + stime of the whole process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kib() { awk -v key="$2:" '$1 == key {print $2}' "/proc/$1/status"; }

# thread_roles PID: one line "role count" per role, from the innermost frame of each thread's backtrace
# that names one of the agent's thread bodies (only the GPU workers carry a name, gpuscope-gpuN, so the
# code a thread runs says what it is).
thread_roles() {
  gdb -p "$1" -batch -ex "set pagination off" -ex "thread apply all bt" 2>/dev/null | awk '
    function flush() { if (in_thread) roles[role == "" ? "other (" first ")" : role]++ }
    /^Thread / { flush(); in_thread = 1; role = ""; first = ""; next }
    in_thread && /^#/ {
      line = $0
      if (first == "" && match(line, / in [^ (]+/)) first = substr(line, RSTART + 4, RLENGTH - 4)
      if (role != "") next
      if (line ~ /GpuWorker::Run/) role = "gpu: one worker per GPU (GpuWorker)"
      else if (line ~ /XidEventMonitor::Run/) role = "gpu: XID event wait (XidEventMonitor)"
      else if (line ~ /Scheduler::Loop/) role = "scheduler: one per enabled collector"
      else if (line ~ /HttpServer::EventLoop/) role = "/metrics: event loop"
      else if (line ~ /HttpServer::WorkerLoop/) role = "/metrics: request workers (grown on demand)"
      else if (line ~ /EventPipeline::Run/) role = "events: pipeline"
      else if (line ~ /MappingDirSource::Run/) role = "attribution: mapping directory watcher"
      else if (line ~ /SlurmJobSource::Run/) role = "attribution: scontrol"
      else if (line ~ /KubeletPodSource::Run/) role = "attribution: kubelet pod-resources"
      else if (line ~ /PodMetadataSource::Run/) role = "attribution: Kubernetes API server"
      else if (line ~ /SnapshotProducer::Run/) role = "sinks: snapshot producer"
      else if (line ~ /PushSender::Run/) role = "sinks: push sender"
      else if (line ~ /TrainingCollector::Receive/) role = "training: socket receiver"
      else if (line ~ / main \(/) role = "main (waits for SIGTERM)"
    }
    END { flush(); for (r in roles) print roles[r] "\t" r }' | sort -t$'\t' -k2
}

measure() {
  local scenario=$1
  local gpus
  gpus=$(awk '$1 == "count:" {print $2; exit}' "$root/sim/scenarios/$scenario.yaml")
  GPUSCOPE_SIM_SCENARIO=$root/sim/scenarios/$scenario.yaml GPUSCOPE_SIM_KERNEL_LOG="" \
    "$agent" --nvml.library "$sim" --web.listen-address "127.0.0.1:$port" --events.state-dir "$work/state-$gpus" \
    >"$work/agent-$gpus.log" 2>&1 &
  agent_pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
  sleep 5  # every collector has run once
  local series
  series=$(curl -s "http://127.0.0.1:$port/metrics" | grep -vc '^#')
  local rss_start
  rss_start=$(status_kib "$agent_pid" VmRSS)
  # Idle: CPU over the window, one scrape every 15 s; perf samples the same window for the simulator's part.
  perf record -q -F 499 -g -p "$agent_pid" -o "$work/perf-$gpus.data" -- sleep "$idle_s" >/dev/null 2>&1 &
  local perf_pid=$!
  local t0 c0
  t0=$(date +%s.%N)
  c0=$(cpu_ticks "$agent_pid")
  local waited=0
  while [ "$waited" -lt "$idle_s" ]; do
    curl -s --compressed "http://127.0.0.1:$port/metrics" >/dev/null  # gzip, as Prometheus asks
    sleep 15 & wait $! || true
    waited=$((waited + 15))
  done
  local c1 t1
  c1=$(cpu_ticks "$agent_pid")
  t1=$(date +%s.%N)
  wait "$perf_pid" || true
  local cpu_pct
  cpu_pct=$(awk -v c="$((c1 - c0))" -v hz="$ticks" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.2f", 100 * c / hz / (t1 - t0)}')
  # Each perf sample's call chain is classified once: the simulator's library anywhere in it, else
  # glibc's allocator or its arena lock (__lll_lock_*_private), else anything else.
  local shares sim_pct malloc_pct
  shares=$(perf script -i "$work/perf-$gpus.data" 2>/dev/null | awk '
    BEGIN { RS = "" }
    { n++
      if ($0 ~ /libnvidia-ml\.so/) sim++
      else if ($0 ~ /__lll_lock_(wait|wake)_private|[ \t](malloc|free|cfree|_int_malloc|_int_free|_int_free_merge_chunk|malloc_consolidate|unlink_chunk[.a-z0-9]*|_int_realloc|realloc|malloc_trim)\+/) heap++ }
    END { if (n == 0) n = 1; printf "%.1f %.1f", 100 * sim / n, 100 * heap / n }')
  read -r sim_pct malloc_pct <<<"$shares"
  local rss_idle anon_idle
  rss_idle=$(status_kib "$agent_pid" VmRSS)
  anon_idle=$(status_kib "$agent_pid" RssAnon)
  # Load: four connections scraping back to back, with gzip as Prometheus does.
  wrk -c4 -t2 -d"${load_s}s" --latency -H "Accept-Encoding: gzip" "http://127.0.0.1:$port/metrics" \
    >"$work/wrk-$gpus.txt"
  local p50 p99 rps
  p50=$(awk '$1 == "50%" {print $2}' "$work/wrk-$gpus.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$work/wrk-$gpus.txt")
  rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$work/wrk-$gpus.txt")
  local rss_load threads
  rss_load=$(status_kib "$agent_pid" VmRSS)
  threads=$(status_kib "$agent_pid" Threads)
  thread_roles "$agent_pid" | awk -F'\t' -v g="$gpus" '{print g "\t" $2 "\t" $1}' >>"$work/roles"
  kill "$agent_pid"
  wait "$agent_pid" 2>/dev/null || true
  agent_pid=""
  printf '| %s (`%s`) | %s | %s %% | %s %% | %s %% | %s | %s | %s | %s | %s | %s | %s |\n' "$gpus" "$scenario" \
    "$series" "$cpu_pct" \
    "$sim_pct" "$malloc_pct" "$((rss_idle / 1024)).$(((rss_idle % 1024) * 10 / 1024))" \
    "$((anon_idle / 1024)).$(((anon_idle % 1024) * 10 / 1024))" \
    "$((rss_load / 1024)).$(((rss_load % 1024) * 10 / 1024))" "$threads" "$rps" "$p50" "$p99" |
    tee -a "$work/rows"
  : "$rss_start"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
measure h100-training
measure h100-16gpu-training
measure h200-nvl72-training
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# Agent footprint on the simulator ($(date -u +%Y-%m-%d), $(nproc) cores, $(git -C "$root" rev-parse --short HEAD))"
  echo
  echo "Load average (1, 5, 15 min) before the run: $load_before; after: $load_after."
  echo
  echo "Default collectors, GPU every 1 s, ${idle_s} s idle window (one scrape every 15 s),"
  echo "then \`wrk -c4 -t2 -d${load_s}s\` on /metrics (gzip, as Prometheus asks). CPU is % of one core over the idle window; \"sim\" and"
  echo "\"malloc+locks\" are shares of that window's perf samples (the simulator's library; glibc malloc/free and"
  echo "lock waits). RSS in MiB; \"of it anonymous\" is RssAnon, the heap and stacks the process owns (the rest is"
  echo "file-backed: the binary's and shared libraries' pages, shared with any other process mapping them)."
  echo
  echo "| GPUs | series | CPU idle | of it sim | of it malloc+locks | RSS idle | of it anonymous | RSS after load | threads | scrapes/s | p50 | p99 |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  cat "$work/rows"
  echo
  echo "Threads by role after the load (gdb backtraces; the innermost frame naming an agent thread body):"
  echo
  awk -F'\t' '{ if (!($2 in seen)) { order[++n] = $2; seen[$2] = 1 } count[$1, $2] = $3; sizes[$1] = 1 }
    END {
      m = 0; for (s in sizes) list[++m] = s + 0
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
      printf "| thread |"; for (i = 1; i <= m; i++) printf " %d GPUs |", list[i]; print ""
      printf "|---|"; for (i = 1; i <= m; i++) printf "---|"; print ""
      for (k = 1; k <= n; k++) {
        printf "| %s |", order[k]
        for (i = 1; i <= m; i++) printf " %s |", ((list[i], order[k]) in count) ? count[list[i], order[k]] : 0
        print ""
      }
    }' "$work/roles"
} >"$out"
cat "$out"

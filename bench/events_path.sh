#!/usr/bin/env bash
# The whole event path under load, one run: a job log written at a fixed rate (default 10,000 lines/s for
# 30 s) of realistic training output (98 % ordinary progress/config lines, 1 % NCCL INFO lines that are
# classified but not shipped, 1 % error events of the job classes) → gpuscope-agent on the simulator
# (file tailer → classifiers → durable queue → Loki push, protobuf+snappy) → gpuscope-push-receiver on
# loopback. Reports the agent's CPU (utime+stime from /proc/PID/stat) as % of one core minus an idle-agent
# baseline measured in the same run, then the backlog drain rate: a pre-written job log of N lines picked
# up at once, timed until its last event is at the receiver (the most the agent can sustain here, wall
# clock, and per CPU-second). Every event written is checked to arrive. Not a test: figures go to
# bench/results/events_path.md and bench/README.md.
# Usage: bench/events_path.sh [seconds] [lines_per_second] [backlog_lines]   (BUILD=dir, default build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
for f in "$build/src/agent/gpuscope-agent" "$build/sim/libnvidia-ml.so.1" \
  "$build/tests/tools/push_receiver/gpuscope-push-receiver"; do
  [[ -e $f ]] || { echo "missing $f: ninja -C $build gpuscope-agent gpuscope_sim_nvml gpuscope-push-receiver" >&2; exit 1; }
done
exec python3 - "$root" "$build" "${1:-30}" "${2:-10000}" "${3:-1000000}" <<'PY'
import os, random, re, shutil, subprocess, sys, tempfile, time

root, build = sys.argv[1], sys.argv[2]
seconds, rate, backlog = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, os.path.join(root, "tests", "integration"))
import harness  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
rng = random.Random(1)
ORDINARY = [
    lambda i: f"step {i} | loss {2.5 - i * 1e-6:.4f} | lr 3.0e-4 | grad_norm {rng.random() + 0.5:.2f} | "
              f"tokens/s {400000 + i % 9973}",
    lambda i: f"Epoch 3/100: {i % 100:d}%|████▏     | {i % 1000}/1000 [01:23<01:55, 5.02it/s, loss=2.31]",
    lambda i: f"[2025-03-14 09:12:44,{i % 1000:03d}] [INFO] [config.py:1000:print] bf16_enabled ................. True",
    lambda i: f"[rank{i % 8}]: iteration {i:8d}/ 500000 | consumed samples: {i * 512:12d} | "
              "elapsed time per iteration (ms): 812.4",
    lambda i: f"checkpoint saved to /lustre/ckpt/run42/step_{i}.pt in 12.3s",
]
NCCL_INFO = "gpu-node07:48211:48211 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.1.2.7<0>"
EVENTS = [
    "gpu-node07:48211:48395 [3] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer gpu-node08<47312> bench={i}",
    "RuntimeError: CUDA error: an illegal memory access was encountered bench={i}",
    "[rank3]:[E1129 10:00:00.123456 1234 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={i}, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity of 79.19 GiB of which 1.02 GiB is free. bench={i}",
]


def line(i):
    """(text, is_shipped_event): 1 in 100 an error event, 1 in 100 an NCCL INFO line, the rest ordinary."""
    if i % 100 == 50:
        return EVENTS[(i // 100) % len(EVENTS)].format(i=i), True
    if i % 100 == 99:
        return NCCL_INFO, False
    return ORDINARY[i % len(ORDINARY)](i), False


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def append(path, data):
    with open(path, "ab") as f:
        f.write(data)


def received(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


work = tempfile.mkdtemp(prefix="gpuscope-bench-events-")
jobs = os.path.join(work, "jobs")
os.makedirs(jobs)
output = os.path.join(work, "received.jsonl")
receiver_log = open(os.path.join(work, "receiver.out"), "w")
receiver = subprocess.Popen([os.path.join(build, "tests/tools/push_receiver/gpuscope-push-receiver"),
                             "--output", output], stdout=receiver_log, stderr=subprocess.STDOUT)


def receiver_port():
    with open(receiver_log.name) as f:
        match = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
    return match.group(1) if match else None


port = harness.wait_for(receiver_port, 30, "the receiver")
agent = harness.Agent(os.path.join(build, "src/agent/gpuscope-agent"),
                      os.path.join(build, "sim/libnvidia-ml.so.1"),
                      os.path.join(root, "sim/scenarios/h100-training.yaml"),
                      extra_args=["--events.file", os.path.join(jobs, "slurm-*.out"),
                                  "--events.state-dir", os.path.join(work, "state"),
                                  "--sink.loki.url", f"http://127.0.0.1:{port}/loki/api/v1/push"],
                      env={"GPUSCOPE_SIM_KERNEL_LOG": ""})
pid = agent.process.pid
try:
    time.sleep(3)  # first collections, NVML opened

    # 1. Idle baseline: the same agent, nothing written.
    t0, c0 = time.monotonic(), cpu_seconds(pid)
    time.sleep(seconds)
    idle = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)

    # 2. `rate` lines/s for `seconds`, written every 10 ms; CPU until the last event is at the receiver.
    job_log = os.path.join(jobs, "slurm-1001.out")
    total = int(rate * seconds)
    events = sum(1 for i in range(total) if line(i)[1])
    chunks, step = [], max(1, rate // 100)
    for start in range(0, total, step):
        chunks.append("".join(line(i)[0] + "\n" for i in range(start, min(total, start + step))).encode())
    written_bytes = sum(len(c) for c in chunks)
    t0, c0 = time.monotonic(), cpu_seconds(pid)
    for k, chunk in enumerate(chunks):
        delay = t0 + k * 0.01 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        append(job_log, chunk)
    t_written = time.monotonic()
    harness.wait_for(lambda: received(output) >= events, 120, f"{events} events at the receiver")
    t1, c1 = time.monotonic(), cpu_seconds(pid)
    load = (c1 - c0) / (t1 - t0)
    path_pct = (load - idle) * 100
    achieved = total / (t_written - t0)
    lag = t1 - t_written

    # 3. Backlog drain: `backlog` lines appear at once (renamed into the glob), timed to the last event.
    staging = os.path.join(work, "backlog.tmp")
    with open(staging, "wb") as f:
        for start in range(0, backlog, 10000):
            f.write("".join(line(i)[0] + "\n" for i in range(start, min(backlog, start + 10000))).encode())
        f.write(b"RuntimeError: CUDA error: an illegal memory access was encountered bench=last\n")
    backlog_bytes = os.path.getsize(staging)
    backlog_events = sum(1 for i in range(backlog) if line(i)[1]) + 1
    before = received(output)
    t0, c0 = time.monotonic(), cpu_seconds(pid)
    os.rename(staging, os.path.join(jobs, "slurm-1002.out"))
    harness.wait_for(lambda: received(output) >= before + backlog_events, 300, "the backlog at the receiver")
    t1, c1 = time.monotonic(), cpu_seconds(pid)
    drain_s, drain_cpu_s = t1 - t0, c1 - c0
finally:
    agent.stop()
    agent.cleanup()
    receiver.terminate()
    receiver.wait()

with open(output) as f:
    arrived = sum(1 for _ in f)
out = os.path.join(root, "bench", "results", "events_path.md")
when = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
mb = backlog_bytes / 1e6
report = f"""# Event path end to end ({when}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})

file tailer → classifiers → durable queue → Loki push (protobuf+snappy) → gpuscope-push-receiver, loopback;
the agent on the simulator (8 GPUs, default collectors). CPU = utime+stime of the agent process.

| | figure |
|---|---|
| idle agent (same run, nothing written, {seconds:.0f} s) | {idle * 100:.2f} % of one core |
| load: {achieved:,.0f} lines/s for {seconds:.0f} s ({written_bytes / seconds / 1e6:.2f} MB/s, \
{events:,} events shipped) | {load * 100:.2f} % of one core |
| **event path at {rate:,} lines/s (load − idle)** | **{path_pct:.2f} % of one core** |
| last event at the receiver after the writer stopped | {lag:.2f} s |
| backlog of {backlog:,} lines ({mb:.0f} MB, {backlog_events:,} events) drained, wall clock | \
{backlog / drain_s:,.0f} lines/s ({mb / drain_s:.0f} MB/s) |
| the same per CPU-second of the agent | {backlog / drain_cpu_s:,.0f} lines/s per core ({mb / drain_cpu_s:.0f} MB/s) |
| events at the receiver / written | {arrived:,} / {events + backlog_events:,} |
"""
print(report)
with open(out, "w") as f:
    f.write(report)
shutil.rmtree(work, ignore_errors=True)
sys.exit(0 if arrived == events + backlog_events else 1)
PY

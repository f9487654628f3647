"""One rank of the demo fleet's synthetic data-parallel training job, instrumented with python/gpuscope
(gpuscope.training) exactly as a real script would be, for the capstone incident of the demo and the
alerting and dashboard tests (docs/design/training.md).

Every step lasts STEP_SECONDS on every rank, as in synchronous training: the rank does its own work
(OWN_SECONDS), then waits in the gradient all-reduce until the step's end. Every rank watches the NVLink
error counter of the GPU named by GPUSCOPE_DEMO_SLOW_GPU on its node's agent (GPUSCOPE_DEMO_METRICS_URL).
Once the link shows CRC errors, the rank on that GPU spends SLOW_EXTRA_SECONDS more on its own work per
step: the model's intra-node traffic over the bad link (tensor-parallel and FSDP gathers inside the
forward and backward passes) is retransmitted, and the data-parallel all-reduce waits for that rank. One
step in REPLAY_EVERY_STEPS then carries a burst of link-level replays (REPLAY_SECONDS more on that rank),
and that step lasts as much longer on every rank, which all wait for it in the all-reduce: the slow steps
the agent traces (--training.traces=slow). Rank 0 also saves a checkpoint every 15 s, every rank waits
5 ms for its loader. No torch: the ranks sleep for their work (integration_training_ddp uses real
PyTorch).

Environment: RANK, LOCAL_RANK, WORLD_SIZE, SLURM_JOB_ID, SLURM_STEP_GPUS, GPUSCOPE_TRAINING_SOCKET as a
launcher sets them; GPUSCOPE_DEMO_SLOW_GPU and GPUSCOPE_DEMO_METRICS_URL for the incident."""

import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gpuscope.training as gt  # noqa: E402

STEP_SECONDS = 0.1
OWN_SECONDS = 0.04
SLOW_EXTRA_SECONDS = 0.035
REPLAY_EVERY_STEPS = 10
REPLAY_SECONDS = 0.15
CHECK_EVERY_SECONDS = 2.0
LOADER_SECONDS = 0.005
CHECKPOINT_EVERY_STEPS = 150
CHECKPOINT_SECONDS = 0.3


def nvlink_errors(url, gpu):
    """Sum of gpuscope_nvlink_errors_total of `gpu` on the node's agent; 0 when unreachable."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return 0
    total = 0.0
    for line in text.splitlines():
        if line.startswith("gpuscope_nvlink_errors_total{") and re.search(r'[{,]gpu="%s"' % gpu, line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def main():
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    gpus = os.environ.get("SLURM_STEP_GPUS", "").split(",")
    my_gpu = gpus[local_rank] if local_rank < len(gpus) else ""
    slow_gpu = os.environ.get("GPUSCOPE_DEMO_SLOW_GPU", "")
    mine = my_gpu != "" and my_gpu == slow_gpu
    url = os.environ.get("GPUSCOPE_DEMO_METRICS_URL", "")
    session = gt.init()
    slowed, next_check, seq = False, 0.0, 0
    while True:
        begin = time.time_ns()
        if slow_gpu and not slowed and time.monotonic() >= next_check:
            slowed = nvlink_errors(url, slow_gpu) > 0
            next_check = time.monotonic() + CHECK_EVERY_SECONDS
        replay = slowed and seq % REPLAY_EVERY_STEPS == REPLAY_EVERY_STEPS - 1
        step_seconds = STEP_SECONDS + (REPLAY_SECONDS if replay else 0)
        own_extra = (SLOW_EXTRA_SECONDS + (REPLAY_SECONDS if replay else 0)) if slowed and mine else 0
        if rank == 0 and seq % CHECKPOINT_EVERY_STEPS == CHECKPOINT_EVERY_STEPS - 1:
            with gt.checkpoint(nbytes=14 << 30):  # a 7B model's weights in bf16
                time.sleep(CHECKPOINT_SECONDS)
        with gt.step(samples=32):
            with gt.dataloader_wait():
                time.sleep(LOADER_SECONDS)
            time.sleep(OWN_SECONDS - LOADER_SECONDS + own_extra)
            entered = time.time_ns()
            session.collective_entered("all_reduce", 256 << 20, entered, comm=1, seq=seq)
            # The all-reduce ends with the step of the slowest rank.
            time.sleep(max(0.0, step_seconds - (time.time_ns() - begin) / 1e9))
            session.collective("all_reduce", 256 << 20, entered, time.time_ns(), comm=1, seq=seq)
        seq += 1


if __name__ == "__main__":
    main()

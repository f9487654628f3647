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

The paragraph above is the fallback without PyTorch. With PyTorch (the interpreter fleet.py picks:
Debian's python3-torch when installed) the ranks train for real: DistributedDataParallel over gloo on
loopback, a small MLP, instrumented with gpuscope.pytorch.instrument_ddp (DDP's gradient all-reduces,
timed) and gpuscope.training (steps, the loader wait, rank 0's checkpoint saves of the real state dict).
Each step is the model's real forward and backward on the CPU (a few ms) and DEVICE_SECONDS of sleep for
the time a GPU would run the step's kernels while the rank's CPU waits: with the whole step on the CPU
the ranks of a small machine contend with each other (and with the fleet's agents and Prometheus) at
random, and their scores swing enough to name a healthy rank (measured with 4 ranks on 2 shared cores,
tests/integration/training_slurm_test.py). Steps start at most every STEP_SECONDS, a pause outside the
step.

How the incident slows the rank: the rank on the GPU named by GPUSCOPE_DEMO_SLOW_GPU watches its GPU's
NVLink error counter on its node's agent (GPUSCOPE_DEMO_METRICS_URL). Once the link shows CRC errors it
does real extra work in every step: EXTRA_PASSES more forward and backward passes of its model on its
batch, outside DDP's synchronisation (model.no_sync()), standing in for the retransmissions of the
model's intra-node traffic over the bad link (tensor-parallel and FSDP gathers inside the forward and
backward passes). The other ranks wait for it in the gradient all-reduce, so every rank's step takes as
long, and only the time each rank spends outside collectives tells the slow one. One step in
REPLAY_EVERY_STEPS it also waits out a burst of link-level replays (REPLAY_SECONDS) before its gradients go
out, as in the fallback: the slow steps the agent traces on every rank.

Environment: RANK, LOCAL_RANK, WORLD_SIZE, SLURM_JOB_ID, SLURM_STEP_GPUS, GPUSCOPE_TRAINING_SOCKET as a
launcher sets them; GPUSCOPE_DEMO_SLOW_GPU and GPUSCOPE_DEMO_METRICS_URL for the incident; MASTER_ADDR and
MASTER_PORT for the real job's rendezvous (without them the ranks stay synthetic)."""

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
# The real job's (with PyTorch).
BATCH = 32
DEVICE_SECONDS = 0.1
EXTRA_PASSES = 12


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


def torch_job():
    """True when this interpreter has torch.distributed and the launcher gave a rendezvous."""
    if not os.environ.get("MASTER_PORT"):
        return False
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available()


class Incident:
    """Whether the node's bad-link GPU (GPUSCOPE_DEMO_SLOW_GPU) has shown NVLink errors yet: checked on the
    node's agent every CHECK_EVERY_SECONDS until it has. `mine`: this rank drives that GPU. Only a rank
    that watches asks the agent: the rank on the GPU, or every rank when `every_rank` (the collective-free
    job, whose ranks act out the all-reduce's wait for the slow one themselves)."""

    def __init__(self, every_rank=False):
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        gpus = os.environ.get("SLURM_STEP_GPUS", "").split(",")
        gpu = gpus[local_rank] if local_rank < len(gpus) else ""
        self.slow_gpu = os.environ.get("GPUSCOPE_DEMO_SLOW_GPU", "")
        self.mine = gpu != "" and gpu == self.slow_gpu
        self.watch = self.mine or (every_rank and self.slow_gpu != "")
        self.url = os.environ.get("GPUSCOPE_DEMO_METRICS_URL", "")
        self.slowed = False
        self.next_check = 0.0

    def link_bad(self):
        if self.watch and not self.slowed and time.monotonic() >= self.next_check:
            self.slowed = nvlink_errors(self.url, self.slow_gpu) > 0
            self.next_check = time.monotonic() + CHECK_EVERY_SECONDS
        return self.slowed


def train_with_torch(torch, dist):
    """The real job: DDP over gloo, paced to a step at most every STEP_SECONDS."""
    import io
    import gpuscope.pytorch

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]),
                            rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10)))
    gpuscope.pytorch.instrument_ddp(model)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    incident = Incident()
    step = 0
    while True:
        begin = time.monotonic()
        slowed = incident.link_bad()
        if rank == 0 and step % CHECKPOINT_EVERY_STEPS == CHECKPOINT_EVERY_STEPS - 1:
            state = model.module.state_dict()
            with gt.checkpoint(nbytes=sum(t.numel() * t.element_size() for t in state.values())):
                torch.save(state, io.BytesIO())
        with gt.step(samples=BATCH):
            with gt.dataloader_wait():
                x, y = torch.randn(BATCH, 256), torch.randint(0, 10, (BATCH,))
            if slowed:
                with model.no_sync():  # the retransmissions: this rank's own work again, nobody else's
                    for _ in range(EXTRA_PASSES):
                        torch.nn.functional.cross_entropy(model(x), y).backward()
                optimiser.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            # The step's kernels on the rank's GPU, while its CPU waits; on the bad link, one step in
            # REPLAY_EVERY_STEPS also waits out a burst of link-level replays before the gradients go out.
            replay = slowed and step % REPLAY_EVERY_STEPS == REPLAY_EVERY_STEPS - 1
            time.sleep(DEVICE_SECONDS + (REPLAY_SECONDS if replay else 0))
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
        step += 1
        time.sleep(max(0.0, STEP_SECONDS - (time.monotonic() - begin)))


def main():
    if torch_job():
        import torch
        import torch.distributed as dist
        return train_with_torch(torch, dist)
    rank = int(os.environ.get("RANK", "0"))
    incident = Incident(every_rank=True)
    mine = incident.mine
    session = gt.init()
    seq = 0
    while True:
        begin = time.time_ns()
        slowed = incident.link_bad()
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

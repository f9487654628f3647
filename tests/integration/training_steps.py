"""Training steps for the tests that read the agent's step histogram: one rank instrumented with
python/gpuscope, run as a Slurm job's process, and the trace id the agent gives a step (its exemplars').
Standard library only."""

import hashlib
import os
import struct
import subprocess
import sys
import textwrap

_RANK = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import gpuscope.training as gt
    gt.init()
    for seconds in map(float, sys.argv[2:]):
        with gt.step(samples=4):
            time.sleep(seconds)
    gt.shutdown()
""")


def run_rank(python_dir, socket_path, job, step_seconds, rank=0):
    """Runs rank `rank` of Slurm job `job` (SLURM_JOB_ID in its environment, as srun sets it), reporting one
    step per entry of `step_seconds`, each that long, to the agent's training socket; waits for it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RANK", "GPUSCOPE_"))}
    env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(rank + 1), SLURM_JOB_ID=str(job),
               GPUSCOPE_TRAINING_SOCKET=socket_path)
    done = subprocess.run([sys.executable, "-c", _RANK, python_dir, *map(str, step_seconds)], env=env,
                          timeout=120, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise AssertionError(f"the rank failed: {done.stdout}")


def step_trace_id(job, step):
    """TrainingStepTraceId(job, step) (src/collectors/training/trace_ids.cc) as hex: SHA-256 of the tag, then
    each part after its length (uint64, little-endian as the agent's x86-64 and arm64 builds write them),
    its leading 16 bytes (an all-zero id made ...01)."""
    digest = hashlib.sha256()
    digest.update(b"gpuscope.training.step-trace")
    for part in (str(job).encode(), struct.pack("<Q", step)):
        digest.update(struct.pack("<Q", len(part)))
        digest.update(part)
    trace = digest.digest()[:16]
    if trace == bytes(16):
        trace = bytes(15) + b"\x01"
    return trace.hex()

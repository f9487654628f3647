"""What the event-path integration tests write into a job log: the classifier corpus (tests/fixtures/events)
with the files in order, the classes each file's lines may produce (the last two none) and the job ids a
line names besides its file's; and numbered events, to count what arrived."""

import os
import re

CORPUS_CLASSES = {
    "kernel/xid.log": {"xid"},
    "kernel/sxid.log": {"sxid"},
    "kernel/oom.log": {"oom", "oom_summary"},
    "kernel/slurm.log": {"slurm_interruption"},
    "jobs/cuda.log": {"cuda"},
    "jobs/cuda_oom.log": {"cuda_oom"},
    "jobs/ib_completion.log": {"ib_completion"},
    "jobs/nccl.log": {"nccl"},
    "jobs/nccl_watchdog.log": {"nccl_watchdog"},
    "kernel/ordinary.log": set(),
    "jobs/nonmatching.log": set(),
}
ALL_CLASSES = set().union(*CORPUS_CLASSES.values())
SEQ = re.compile(r"e2e-seq=(\d+)")


def numbered_line(i):
    """Event number i, alternating between two streams (nccl/warning and cuda/error)."""
    if i % 2 == 0:
        return f"gpu-node07:48211:48395 [3] misc/socket.cc:538 NCCL WARN Net : Connection closed e2e-seq={i:07d}"
    return f"RuntimeError: CUDA error: device-side assert triggered e2e-seq={i:07d}"


def read_corpus(fixtures):
    """[(fixture file, line)] in the order the tests write them."""
    corpus = []
    for name in CORPUS_CLASSES:
        with open(os.path.join(fixtures, "events", name), encoding="utf-8") as f:
            corpus += [(name, line.rstrip("\n")) for line in f if line.strip() and not line.startswith("#")]
    return corpus


def allowed_classes(corpus):
    """{line: classes its fixture files allow}."""
    allowed = {}
    for name, line in corpus:
        allowed.setdefault(line, set()).update(CORPUS_CLASSES[name])
    return allowed


def jobs_named(line, file_job):
    """The job ids an event from `line` may be attributed to: the file's, or one the line names."""
    named = re.findall(r"JOB (\d+)|STEP (\d+)|job_(\d+)|StepId=(\d+)|step (\d+)\.", line)
    return {file_job} | {g for groups in named for g in groups if g}

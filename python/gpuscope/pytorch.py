"""PyTorch integration of gpuscope.training: times torch.distributed collectives without changes to the
model code (docs/design/training.md).

    import gpuscope.pytorch
    model = DistributedDataParallel(model)
    gpuscope.pytorch.instrument_ddp(model)   # one line: DDP's gradient all-reduces, timed
    gpuscope.pytorch.time_collectives()      # optional: torch.distributed.all_reduce & co. called directly

Each collective becomes one record: operation, bytes, a per-process-group sequence number, when this rank
entered it and when it completed here. In synchronous training a fast rank's collectives last longer
(it waits for the slow one inside them), which is what lets the agent score each rank on its own work.

Importing this module imports torch; gpuscope.training does not.
"""

import functools
import itertools
import threading
import time
import zlib

import torch
import torch.distributed as dist

from . import training

_sequences = {}
_sequences_lock = threading.Lock()


def _group_key(group):
    """A stable 64-bit id of a process group: the same on every rank (its ranks in order), so the agent
    can line up one communicator's sequence numbers across ranks."""
    try:
        ranks = dist.get_process_group_ranks(group) if group is not None else list(range(dist.get_world_size()))
    except Exception:  # torch < 2.0 has no get_process_group_ranks: the world, or the group's size
        try:
            ranks = list(range(dist.get_world_size(group)))
        except Exception:
            ranks = []
    return zlib.crc32(",".join(map(str, ranks)).encode()) | (len(ranks) << 32)


def _next_seq(key):
    with _sequences_lock:
        counter = _sequences.setdefault(key, itertools.count())
        return next(counter)


def _nbytes(tensors):
    total = 0
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor):
            total += tensor.numel() * tensor.element_size()
        elif isinstance(tensor, (list, tuple)):
            total += _nbytes(tensor)
    return total


def _size(group):
    try:
        return dist.get_world_size(group)
    except Exception:
        return 0


def instrument_ddp(model, process_group=None):
    """Registers a communication hook on a DistributedDataParallel `model` that does what DDP's default
    does (all-reduce each gradient bucket, averaged) and records each bucket's all-reduce."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    session = training.session()
    key = _group_key(process_group)
    nranks = _size(process_group)

    def hook(state, bucket):
        begin = time.time_ns()
        seq = _next_seq(key)
        buffer = bucket.buffer()
        nbytes = buffer.numel() * buffer.element_size()
        session.collective_entered("all_reduce", nbytes, begin, comm=key, seq=seq, nranks=nranks)
        future = default_hooks.allreduce_hook(state, bucket)

        def completed(fut):
            session.collective("all_reduce", nbytes, begin, time.time_ns(), comm=key, seq=seq, nranks=nranks)
            return fut.value()

        return future.then(completed)

    model.register_comm_hook(process_group, hook)
    return model


_patched = False
_COLLECTIVES = ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "all_to_all", "barrier",
                "gather", "scatter")


def time_collectives():
    """Wraps the torch.distributed collectives a script calls directly; idempotent. Synchronous calls are
    timed around the call, asynchronous ones (async_op=True) until their work completes."""
    global _patched
    if _patched:
        return
    _patched = True
    session = training.session()
    for name in _COLLECTIVES:
        original = getattr(dist, name, None)
        if original is None:
            continue
        setattr(dist, name, _wrap(name, original, session))


def _wrap(name, original, session):
    @functools.wraps(original)
    def timed(*args, **kwargs):
        group = kwargs.get("group")
        key = _group_key(group)
        seq = _next_seq(key)
        nbytes = _nbytes(args[:2])
        begin = time.time_ns()
        session.collective_entered(name, nbytes, begin, comm=key, seq=seq, nranks=_size(group))
        result = original(*args, **kwargs)
        if kwargs.get("async_op") and result is not None:
            try:
                def completed(fut):
                    session.collective(name, nbytes, begin, time.time_ns(), comm=key, seq=seq, nranks=_size(group))
                    return fut.value()

                result.get_future().then(completed)
            except Exception:
                session.collective(name, nbytes, begin, 0, comm=key, seq=seq, nranks=_size(group))
        else:
            session.collective(name, nbytes, begin, time.time_ns(), comm=key, seq=seq, nranks=_size(group))
        return result

    return timed

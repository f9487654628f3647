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
import inspect
import itertools
import threading
import time
import zlib

import torch
import torch.distributed as dist

from . import training

_sequences = {}
_sequences_lock = threading.Lock()
# Set while instrument_ddp's hook runs DDP's all-reduce, so that the wrapped dist.all_reduce it calls is not
# recorded a second time (with a second sequence number) when time_collectives() is on too.
_in_ddp_hook = threading.local()


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
        _in_ddp_hook.active = True
        try:
            future = default_hooks.allreduce_hook(state, bucket)
        finally:
            _in_ddp_hook.active = False

        def completed(fut):
            session.collective("all_reduce", nbytes, begin, time.time_ns(), comm=key, seq=seq, nranks=nranks)
            return fut.value()

        return future.then(completed)

    model.register_comm_hook(process_group, hook)
    return model


_patched = False
# The torch.distributed functions time_collectives() wraps: {name: (operation as NCCL names it, the
# parameter whose bytes are the collective's size)}. The size follows NCCL's count: what one rank sends for
# all-gather, what one rank receives for reduce-scatter, the whole buffer for the others.
_COLLECTIVES = {
    "all_reduce": ("all_reduce", "tensor"),
    "broadcast": ("broadcast", "tensor"),
    "reduce": ("reduce", "tensor"),
    "all_gather": ("all_gather", "tensor"),
    "all_gather_into_tensor": ("all_gather", "input_tensor"),
    "reduce_scatter": ("reduce_scatter", "output"),
    "reduce_scatter_tensor": ("reduce_scatter", "output"),
    "all_to_all": ("all_to_all", "input_tensor_list"),
    "gather": ("gather", "tensor"),
    "scatter": ("scatter", "tensor"),
    "barrier": ("barrier", None),
}


def time_collectives():
    """Wraps the torch.distributed collectives a script calls directly (dist.all_reduce(...) and the others
    of _COLLECTIVES; names imported with `from torch.distributed import ...` before this call keep the
    unwrapped function); idempotent. Synchronous calls are timed around the call, asynchronous ones
    (async_op=True) until their work completes. A collective that raises propagates its exception unchanged,
    after its entry record; a rank outside the call's group is not timed (torch does nothing there)."""
    global _patched
    if _patched:
        return
    _patched = True
    session = training.session()
    for name, (op, size_parameter) in _COLLECTIVES.items():
        original = getattr(dist, name, None)
        if original is None:
            continue
        setattr(dist, name, _wrap(op, size_parameter, original, session))


def _wrap(op, size_parameter, original, session):
    try:
        signature = inspect.signature(original)
    except (TypeError, ValueError):
        return original

    @functools.wraps(original)
    def timed(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)  # torch raises its own error for the bad call
        bound.apply_defaults()
        group = bound.arguments.get("group")
        if getattr(_in_ddp_hook, "active", False) or _outside(group):
            return original(*args, **kwargs)
        key = _group_key(group)
        nranks = _size(group)
        seq = _next_seq(key)
        nbytes = _nbytes([bound.arguments.get(size_parameter)]) if size_parameter else 0
        begin = time.time_ns()
        session.collective_entered(op, nbytes, begin, comm=key, seq=seq, nranks=nranks)
        result = original(*args, **kwargs)
        if bound.arguments.get("async_op") and result is not None:

            def completed(fut):
                session.collective(op, nbytes, begin, time.time_ns(), comm=key, seq=seq, nranks=nranks)
                return fut.value()

            try:
                result.get_future().then(completed)
            except Exception:  # a backend whose work has no future: the entry record stands alone
                pass
        else:
            session.collective(op, nbytes, begin, time.time_ns(), comm=key, seq=seq, nranks=nranks)
        return result

    return timed


def _outside(group):
    """True when this rank is not a member of `group` (torch returns at once without communicating)."""
    try:
        return group is not None and dist._rank_not_in_group(group)
    except Exception:
        return False

"""The training socket's wire format, version 1 (docs/design/training.md): little-endian datagrams of at
most MAX_DATAGRAM bytes, a header then records, each record its type, body size and body."""

import struct

MAGIC = b"GPST"
VERSION = 1
MAX_DATAGRAM = 8192

HEADER = struct.Struct("<4sBBHI")  # magic, version, flags, record count, producer drops
RECORD = struct.Struct("<BH")  # type, body size

HELLO = 1
STEP = 2
COLLECTIVE = 3
MARK = 4

MARK_CHECKPOINT = 1
MARK_DATALOADER_WAIT = 2
MARK_GRAD_NORM = 3

_HELLO = struct.Struct("<iiiB")  # rank, local rank, world size, job length (job bytes follow)
_STEP = struct.Struct("<QQQI")  # step, begin ns, end ns, samples
_COLLECTIVE = struct.Struct("<QQBBBBQiQQ")  # comm, seq, op, dtype, algo, proto, bytes, nranks, begin, end
_MARK = struct.Struct("<BQQd")  # kind, begin ns, end ns, value

# Collective operations, as NCCL's profiler names them (ncclFunc_t order).
OPS = {"broadcast": 0, "reduce": 1, "all_gather": 2, "reduce_scatter": 3, "all_reduce": 4,
       "send_recv": 5, "send": 6, "recv": 7, "barrier": 8, "all_to_all": 9, "gather": 10, "scatter": 11}


def _record(kind, body):
    return RECORD.pack(kind, len(body)) + body


def hello(rank, local_rank, world_size, job):
    job_bytes = job.encode("utf-8", "replace")[:255]
    return _record(HELLO, _HELLO.pack(rank, local_rank, world_size, len(job_bytes)) + job_bytes)


def step(number, begin_ns, end_ns, samples):
    return _record(STEP, _STEP.pack(number, begin_ns, end_ns, samples))


def collective(comm, seq, op, nbytes, nranks, begin_ns, end_ns, dtype=0, algo=0, proto=0):
    return _record(COLLECTIVE, _COLLECTIVE.pack(comm, seq, op, dtype, algo, proto, nbytes, nranks,
                                                begin_ns, end_ns))


def mark(kind, begin_ns, end_ns, value=0.0):
    return _record(MARK, _MARK.pack(kind, begin_ns, end_ns, float(value)))


def datagram(records, drops):
    """One datagram of already-encoded records (the caller keeps it under MAX_DATAGRAM)."""
    return HEADER.pack(MAGIC, VERSION, 0, len(records), min(drops, 0xFFFFFFFF)) + b"".join(records)


def decode(data):
    """(drops, [(type, fields)]) of one datagram; ValueError when it is not a version-1 datagram. Records
    of unknown types are returned as (type, body bytes). The agent has its own decoder; this one serves
    the package's tests and tools."""
    if len(data) < HEADER.size:
        raise ValueError("short datagram")
    magic, version, _flags, count, drops = HEADER.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise ValueError("not a gpuscope training datagram")
    offset, records = HEADER.size, []
    for _ in range(count):
        if offset + RECORD.size > len(data):
            raise ValueError("truncated record header")
        kind, size = RECORD.unpack_from(data, offset)
        offset += RECORD.size
        body = data[offset:offset + size]
        if len(body) != size:
            raise ValueError("truncated record body")
        offset += size
        if kind == HELLO:
            rank, local_rank, world_size, job_len = _HELLO.unpack_from(body)
            job = body[_HELLO.size:_HELLO.size + job_len].decode("utf-8", "replace")
            records.append((kind, (rank, local_rank, world_size, job)))
        elif kind == STEP:
            records.append((kind, _STEP.unpack(body)))
        elif kind == COLLECTIVE:
            records.append((kind, _COLLECTIVE.unpack(body)))
        elif kind == MARK:
            records.append((kind, _MARK.unpack(body)))
        else:
            records.append((kind, body))
    return drops, records

"""Per-rank training telemetry for the gpuscope node agent.

    import gpuscope.training as gt
    gt.init()                          # optional: the first mark initialises from the environment
    for batch in loader:
        with gt.step(samples=len(batch)):
            ...
    with gt.checkpoint(nbytes=size):   # optional marks
        save(...)

Rank, local rank, world size and job come from the environment (torchrun: RANK, LOCAL_RANK, WORLD_SIZE;
Slurm: SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, SLURM_JOB_ID; Open MPI and PMI likewise). Records go
to the agent's training socket, GPUSCOPE_TRAINING_SOCKET (default /run/gpuscope/training.sock), one
datagram per step, sent without waiting: a busy agent loses the datagram (counted, and the count reaches
the agent in the next one), an absent agent costs one failed system call and then nothing for a few
seconds. Nothing here raises into the training script; the agent learns who sent a datagram from the
kernel (the sender's pid), not from these fields, which it only checks.

Thread-safe: marks may come from several threads of one process.
"""

import atexit
import contextlib
import errno
import os
import socket
import threading
import time

from . import _wire

DEFAULT_SOCKET = "/run/gpuscope/training.sock"
# After a send that found no agent, records are dropped (counted) without a system call for this long.
QUIET_AFTER_NO_AGENT_S = 5.0
# Records of collectives entered but not completed are sent at least this often, step or no step.
FLUSH_IN_FLIGHT_S = 2.0
# At close, a busy agent (its socket's queue full) gets this many tries, this far apart, at the last records.
CLOSE_RETRIES = 20
CLOSE_RETRY_S = 0.01

_RANK = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
_LOCAL_RANK = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
_WORLD_SIZE = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
_JOB = ("SLURM_JOB_ID", "GPUSCOPE_JOB_ID")
# errno values that mean "no agent here" (socket missing, nobody bound, not allowed), not "agent busy".
_NO_AGENT = {errno.ENOENT, errno.ECONNREFUSED, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EPROTOTYPE}


def _first_int(names, default):
    for name in names:
        value = os.environ.get(name)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                continue
    return default


def _first_str(names):
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return ""


class Session:
    """One process's connection to the agent: its identity, pending records and counters."""

    def __init__(self, socket_path=None, clock_ns=time.time_ns, monotonic=time.monotonic):
        self.path = socket_path or os.environ.get("GPUSCOPE_TRAINING_SOCKET") or DEFAULT_SOCKET
        self.rank = _first_int(_RANK, 0)
        self.local_rank = _first_int(_LOCAL_RANK, 0)
        self.world_size = _first_int(_WORLD_SIZE, 1)
        self.job = _first_str(_JOB)
        self.sent = 0  # records the kernel accepted
        self.dropped = 0  # records that never left: agent absent or busy, or a failure here
        self._clock_ns = clock_ns
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._pending = []
        self._pending_bytes = 0
        self._retry_later = False
        self._quiet_until = 0.0
        self._step = 0
        self._flusher = None
        self._closed = threading.Event()
        self._hello = _wire.hello(self.rank, self.local_rank, self.world_size, self.job)
        try:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.setblocking(False)
        except OSError:
            self._sock = None

    # ---- marks ----

    @contextlib.contextmanager
    def step(self, samples=0):
        """Times one training step; the record is sent when the step ends (also when it raises)."""
        begin = self._clock_ns()
        try:
            yield
        finally:
            end = self._clock_ns()
            with self._lock:
                number = self._step
                self._step += 1
            self._add(_wire.step(number, begin, end, int(samples or 0)))
            self.flush()

    @contextlib.contextmanager
    def checkpoint(self, nbytes=0):
        """Times a checkpoint save of `nbytes` bytes (0 when unknown)."""
        begin = self._clock_ns()
        try:
            yield
        finally:
            self._add(_wire.mark(_wire.MARK_CHECKPOINT, begin, self._clock_ns(), float(nbytes or 0)))
            self.flush()

    @contextlib.contextmanager
    def dataloader_wait(self):
        """Times a wait for the next batch (sent with the step that follows)."""
        begin = self._clock_ns()
        try:
            yield
        finally:
            self._add(_wire.mark(_wire.MARK_DATALOADER_WAIT, begin, self._clock_ns()))

    def grad_norm(self, value):
        """Records the gradient norm of the current step (sent with the step)."""
        now = self._clock_ns()
        try:
            self._add(_wire.mark(_wire.MARK_GRAD_NORM, now, now, float(value)))
        except (TypeError, ValueError):
            with self._lock:
                self.dropped += 1

    def collective_entered(self, op, nbytes, begin_ns, comm=0, seq=0, nranks=0):
        """Records that this rank entered a collective (end 0: not completed yet). Sent within
        FLUSH_IN_FLIGHT_S even when no step ends, so that the agent sees which ranks moved on to the next
        collective and which did not (a hang)."""
        self.collective(op, nbytes, begin_ns, 0, comm, seq, nranks)
        self._start_flusher()

    def collective(self, op, nbytes, begin_ns, end_ns, comm=0, seq=0, nranks=0):
        """Records one collective timed by the caller (the PyTorch helper); end_ns 0: entered, not completed."""
        code = _wire.OPS.get(op, 255) if isinstance(op, str) else int(op)
        try:
            self._add(_wire.collective(int(comm) & 0xFFFFFFFFFFFFFFFF, int(seq), code & 0xFF, int(nbytes),
                                       int(nranks or self.world_size), int(begin_ns), int(end_ns)))
        except (TypeError, ValueError, OverflowError):
            with self._lock:
                self.dropped += 1

    # ---- sending ----

    @property
    def pending(self):
        """Records waiting for the next send (a refused send keeps them, up to one datagram's worth)."""
        with self._lock:
            return len(self._pending)

    def _add(self, record):
        with self._lock:
            if self._pending_bytes + len(record) > _wire.MAX_DATAGRAM - 64:
                self._send_locked()
            if self._pending_bytes + len(record) > _wire.MAX_DATAGRAM - 64:
                # Still full: the agent's queue refused them again. One datagram is all a rank keeps.
                self.dropped += len(self._pending)
                self._pending, self._pending_bytes = [], 0
            self._pending.append(record)
            self._pending_bytes += len(record)

    def flush(self):
        """Sends what is pending now. Never raises, never blocks."""
        with self._lock:
            self._send_locked()
        self._ensure_retry()

    def _start_flusher(self):
        with self._lock:
            if self._flusher is not None:
                return
            self._flusher = threading.Thread(target=self._flush_periodically, name="gpuscope-flush", daemon=True)
        self._flusher.start()

    def _flush_periodically(self):
        while not self._closed.wait(FLUSH_IN_FLIGHT_S):
            self.flush()

    def _ensure_retry(self):
        """After a refused send, the flusher retries within FLUSH_IN_FLIGHT_S even if no step ends."""
        if self._retry_later:
            self._retry_later = False
            self._start_flusher()

    def _send_locked(self):
        records, self._pending, self._pending_bytes = self._pending, [], 0
        if not records:
            return
        if self._sock is None or self._monotonic() < self._quiet_until:
            self.dropped += len(records)
            return
        # Every datagram starts with the hello: an agent started (or restarted) mid-job needs no handshake.
        data = _wire.datagram([self._hello] + records, self.dropped)
        try:
            self._sock.sendto(data, self.path)
            self.sent += len(records)
        except BlockingIOError:
            # The agent's socket holds net.unix.max_dgram_qlen datagrams (often 10) whatever its buffer: a
            # receiver off the CPU for a moment refuses. Kept for the next send (the next step's, or the
            # flusher's within FLUSH_IN_FLIGHT_S), up to one datagram's worth; older ones go first.
            self._pending, self._pending_bytes = records, sum(len(r) for r in records)
            self._retry_later = True
        except OSError as error:
            self.dropped += len(records)
            if error.errno in _NO_AGENT:
                self._quiet_until = self._monotonic() + QUIET_AFTER_NO_AGENT_S
        except Exception:  # never into the training script
            self.dropped += len(records)

    def close(self):
        self._closed.set()
        for _ in range(CLOSE_RETRIES):  # a busy agent gets a few tries at the last records
            with self._lock:
                self._send_locked()
                if not self._pending:
                    break
            time.sleep(CLOSE_RETRY_S)
        with self._lock:
            self.dropped += len(self._pending)
            self._pending, self._pending_bytes = [], 0
        if self._sock is not None:
            self._sock.close()
            self._sock = None


_session = None
_session_lock = threading.Lock()


def init(socket_path=None):
    """Starts (or returns) this process's session, reading rank, world size and job from the environment."""
    global _session
    with _session_lock:
        if _session is None:
            _session = Session(socket_path)
        return _session


def session():
    """This process's session, started on first use."""
    return _session if _session is not None else init()


def step(samples=0):
    return session().step(samples)


def checkpoint(nbytes=0):
    return session().checkpoint(nbytes)


def dataloader_wait():
    return session().dataloader_wait()


def grad_norm(value):
    session().grad_norm(value)


def shutdown():
    """Sends what is pending and closes the socket (also done at interpreter exit)."""
    global _session
    with _session_lock:
        if _session is not None:
            _session.close()
            _session = None


def _at_exit():
    try:
        shutdown()
    except Exception:
        pass


atexit.register(_at_exit)

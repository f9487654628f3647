"""gpuscope.training against a real unix datagram socket bound the way the agent binds it (SO_PASSCRED):
what each mark sends, that the kernel names the sending pid, that the environment of torchrun and of Slurm
gives rank and job, and that an absent or flooded agent never raises, never blocks and is counted."""

import os
import socket
import struct
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "tools"))

from gpuscope import _wire, training  # noqa: E402
import unittest_main  # noqa: E402

CREDS = struct.Struct("iII")  # struct ucred: pid, uid, gid


class Agent:
    """The receiving end: a datagram socket with SO_PASSCRED, as the agent's training source has."""

    def __init__(self, rcvbuf=None):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-training-")
        self.path = os.path.join(self.dir, "training.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.bind(self.path)
        self.sock.settimeout(5)

    def receive(self):
        """(pid from the kernel, drops, records) of the next datagram."""
        data, ancillary, _flags, _addr = self.sock.recvmsg(_wire.MAX_DATAGRAM, socket.CMSG_SPACE(CREDS.size))
        pid = None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = CREDS.unpack(payload[:CREDS.size])[0]
        drops, records = _wire.decode(data)
        return pid, drops, records

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


class FakeClock:
    def __init__(self):
        self.ns = 1_700_000_000_000_000_000
        self.mono = 100.0

    def clock_ns(self):
        self.ns += 1_000_000
        return self.ns

    def monotonic(self):
        return self.mono


class Environment:
    """Sets environment variables for one test and puts the old ones back."""

    NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_JOB_ID",
             "OMPI_COMM_WORLD_RANK", "PMI_RANK", "GPUSCOPE_JOB_ID", "GPUSCOPE_TRAINING_SOCKET")

    def __init__(self, **values):
        self.values = values

    def __enter__(self):
        self.saved = {name: os.environ.pop(name, None) for name in self.NAMES}
        os.environ.update(self.values)
        return self

    def __exit__(self, *exc):
        for name in self.NAMES:
            os.environ.pop(name, None)
            if self.saved[name] is not None:
                os.environ[name] = self.saved[name]


class TrainingSession(unittest.TestCase):
    def setUp(self):
        self.agent = Agent()

    def tearDown(self):
        self.agent.close()

    def test_a_step_arrives_as_one_datagram_with_the_hello_and_the_kernel_names_the_pid(self):
        clock = FakeClock()
        with Environment(SLURM_PROCID="3", SLURM_LOCALID="1", SLURM_NTASKS="8", SLURM_JOB_ID="4242"):
            session = training.Session(self.agent.path, clock.clock_ns, clock.monotonic)
        self.addCleanup(session.close)
        with session.step(samples=32):
            pass
        pid, drops, records = self.agent.receive()
        self.assertEqual(pid, os.getpid())
        self.assertEqual(drops, 0)
        self.assertEqual(records[0], (_wire.HELLO, (3, 1, 8, "4242")))
        kind, (number, begin, end, samples) = records[1]
        self.assertEqual((kind, number, samples), (_wire.STEP, 0, 32))
        self.assertEqual(end - begin, 1_000_000)
        self.assertEqual(session.sent, 1)

    def test_torchrun_variables_win_over_slurm_ones(self):
        with Environment(RANK="5", LOCAL_RANK="2", WORLD_SIZE="16", SLURM_PROCID="0", SLURM_JOB_ID="77"):
            session = training.Session(self.agent.path)
        self.addCleanup(session.close)
        self.assertEqual((session.rank, session.local_rank, session.world_size, session.job), (5, 2, 16, "77"))

    def test_marks_and_collectives_travel_with_the_next_step_in_order(self):
        clock = FakeClock()
        session = training.Session(self.agent.path, clock.clock_ns, clock.monotonic)
        self.addCleanup(session.close)
        with session.dataloader_wait():
            pass
        session.grad_norm(0.875)
        session.collective("all_reduce", 1 << 20, 10, 20, comm=0xABCDEF, seq=7, nranks=4)
        with session.step(samples=8):
            pass
        _pid, _drops, records = self.agent.receive()
        kinds = [kind for kind, _ in records]
        self.assertEqual(kinds, [_wire.HELLO, _wire.MARK, _wire.MARK, _wire.COLLECTIVE, _wire.STEP])
        self.assertEqual(records[1][1][0], _wire.MARK_DATALOADER_WAIT)
        self.assertEqual(records[2][1][0], _wire.MARK_GRAD_NORM)
        self.assertEqual(records[2][1][3], 0.875)
        comm, seq, op, _dtype, _algo, _proto, nbytes, nranks, begin, end = records[3][1]
        self.assertEqual((comm, seq, op, nbytes, nranks, begin, end),
                         (0xABCDEF, 7, _wire.OPS["all_reduce"], 1 << 20, 4, 10, 20))

    def test_a_checkpoint_is_sent_when_it_ends_with_its_bytes_even_when_the_save_raises(self):
        session = training.Session(self.agent.path)
        self.addCleanup(session.close)
        with self.assertRaises(RuntimeError):
            with session.checkpoint(nbytes=123456789):
                raise RuntimeError("disk full")
        _pid, _drops, records = self.agent.receive()
        self.assertEqual(records[1][0], _wire.MARK)
        self.assertEqual(records[1][1][0], _wire.MARK_CHECKPOINT)
        self.assertEqual(records[1][1][3], 123456789.0)

    def test_many_marks_in_one_step_are_split_into_datagrams_under_the_limit(self):
        session = training.Session(self.agent.path)
        self.addCleanup(session.close)
        for i in range(1000):
            session.collective("all_gather", 4096, i, i + 1, seq=i)
        session.flush()
        seqs = []
        while len(seqs) < 1000:
            _pid, _drops, records = self.agent.receive()
            self.assertEqual(records[0][0], _wire.HELLO)
            seqs += [fields[1] for kind, fields in records if kind == _wire.COLLECTIVE]
        self.assertEqual(seqs, list(range(1000)))

    def test_marks_from_several_threads_all_arrive(self):
        session = training.Session(self.agent.path)
        self.addCleanup(session.close)

        def work(base):
            for i in range(200):
                session.collective("broadcast", 8, 1, 2, seq=base + i)

        threads = [threading.Thread(target=work, args=(k * 1000,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        session.flush()
        seqs = set()
        while len(seqs) < 800:
            _pid, _drops, records = self.agent.receive()
            seqs |= {fields[1] for kind, fields in records if kind == _wire.COLLECTIVE}
        self.assertEqual(seqs, {k * 1000 + i for k in range(4) for i in range(200)})


class NoAgent(unittest.TestCase):
    def test_an_absent_agent_raises_nothing_and_costs_one_syscall_per_quiet_period(self):
        clock = FakeClock()
        missing = os.path.join(tempfile.mkdtemp(prefix="gpuscope-none-"), "training.sock")
        session = training.Session(missing, clock.clock_ns, clock.monotonic)
        calls = []
        real = session._sock

        class CountingSocket:
            def sendto(self, data, path):
                calls.append(path)
                return real.sendto(data, path)

        session._sock = CountingSocket()
        for _ in range(100):
            with session.step():
                pass
        self.assertEqual(len(calls), 1, "after the first failure, no syscall until the quiet period ends")
        self.assertEqual(session.dropped, 100)
        clock.mono += training.QUIET_AFTER_NO_AGENT_S + 0.1
        with session.step():
            pass
        self.assertEqual(len(calls), 2)
        real.close()

    def test_a_flooded_agent_never_blocks_and_the_loss_reaches_it_in_a_later_datagram(self):
        agent = Agent(rcvbuf=4096)
        try:
            session = training.Session(agent.path)
            for _ in range(2000):
                with session.step():
                    pass
            self.assertGreater(session.dropped, 0, "a 4 KiB buffer that nobody reads fills")
            self.assertEqual(session.sent + session.dropped + session.pending, 2000)
            while True:  # drain what the buffer held
                agent.sock.settimeout(0.2)
                try:
                    agent.receive()
                except (socket.timeout, BlockingIOError):
                    break
            agent.sock.settimeout(5)
            with session.step():
                pass
            _pid, drops, _records = agent.receive()
            self.assertEqual(drops, session.dropped)
            session.close()
        finally:
            agent.close()

    def test_an_agent_whose_queue_is_full_for_a_moment_loses_no_step(self):
        # The kernel queues net.unix.max_dgram_qlen datagrams (10 by default) on the agent's socket, however
        # large its buffer: a receiver off the CPU for a few steps refuses the rest. They wait in the
        # session and leave with the next step's datagram.
        agent = Agent()
        self.addCleanup(agent.close)
        session = training.Session(agent.path)
        for _ in range(60):
            with session.step():
                pass
        self.assertEqual(session.dropped, 0)
        self.assertGreater(session.pending, 0, "the queue filled: the rest waits")
        steps = []
        agent.sock.settimeout(0.2)
        while True:
            try:
                steps += [r for r in agent.receive()[2] if r[0] == _wire.STEP]
            except (socket.timeout, BlockingIOError):
                break
        agent.sock.settimeout(5)
        with session.step():
            pass
        _pid, drops, records = agent.receive()
        steps += [r for r in records if r[0] == _wire.STEP]
        self.assertEqual(drops, 0)
        self.assertEqual([r[1][0] for r in steps], list(range(61)), "every step once, in order")
        self.assertEqual(session.pending, 0)
        session.close()

    def test_the_module_api_uses_one_session_from_the_environment(self):
        agent = Agent()
        try:
            with Environment(GPUSCOPE_TRAINING_SOCKET=agent.path, RANK="1", WORLD_SIZE="2"):
                training.shutdown()
                with training.step(samples=4):
                    pass
                self.assertIs(training.session(), training.init())
                self.assertEqual(training.session().rank, 1)
            _pid, _drops, records = agent.receive()
            self.assertEqual(records[0], (_wire.HELLO, (1, 0, 2, "")))
            training.shutdown()
        finally:
            agent.close()


class Wire(unittest.TestCase):
    def test_truncated_and_foreign_datagrams_are_refused(self):
        good = _wire.datagram([_wire.step(1, 2, 3, 4)], 0)
        for bad in (b"", good[:5], b"XXXX" + good[4:], good[:-1]):
            with self.assertRaises(ValueError):
                _wire.decode(bad)

    def test_an_unknown_record_type_is_skipped_by_its_size(self):
        data = _wire.datagram([_wire._record(99, b"future"), _wire.step(1, 2, 3, 4)], 0)
        _drops, records = _wire.decode(data)
        self.assertEqual(records, [(99, b"future"), (_wire.STEP, (1, 2, 3, 4))])


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

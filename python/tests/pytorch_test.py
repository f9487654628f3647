"""gpuscope.pytorch.time_collectives() with real torch.distributed (Debian's python3-torch, gloo, two
processes on loopback) against a unix datagram socket bound the way the agent binds it: each collective a
script calls directly arrives as an entry record and a completion record with its operation, bytes (NCCL's
count: what a rank sends for all-gather, receives for reduce-scatter), nranks and the communicator's
sequence number, the same on both ranks; an asynchronous one completes when its work does; one that raises
propagates the exception unchanged; the collective's result is untouched; DDP's all-reduce under
instrument_ddp is recorded once, not again by the wrapper.

Usage: pytorch_test.py TORCH_PYTHON (an interpreter whose torch has torch.distributed; the cases skip
without one)"""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "tools"))

from gpuscope import _wire  # noqa: E402
import unittest_main  # noqa: E402

TORCH_PYTHON = sys.argv[1] if len(sys.argv) > 1 else ""
CREDS = struct.Struct("iII")  # struct ucred: pid, uid, gid
N = 1000  # float32 elements: 4,000 bytes

WORKER = textwrap.dedent("""
    import os, sys
    import torch, torch.distributed as dist
    import gpuscope.pytorch, gpuscope.training as gt

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PORT"], rank=rank, world_size=2)
    gpuscope.pytorch.time_collectives()
    gpuscope.pytorch.time_collectives()  # idempotent: wrapped once
    n = int(sys.argv[1])
    t = torch.ones(n)
    dist.all_reduce(t)                                         # seq 0
    assert t.eq(2).all(), t
    dist.broadcast(t, src=0)                                   # seq 1
    gathered = [torch.zeros(n) for _ in range(2)]
    dist.all_gather(gathered, torch.full((n,), float(rank)))   # seq 2
    assert gathered[1].eq(1).all()
    work = dist.all_reduce(t, dist.ReduceOp.SUM, None, True)   # seq 3: positional group and async_op
    work.wait()
    assert t.eq(4).all(), t
    try:                                                       # seq 4: gloo has no reduce_scatter
        dist.reduce_scatter(torch.zeros(n // 2), [torch.ones(n // 2), torch.ones(n // 2)])
        print("reduce_scatter: no error")
    except RuntimeError as error:
        print("reduce_scatter raised:", error)
    dist.barrier()                                             # seq 5
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(10, 10))
    gpuscope.pytorch.instrument_ddp(model)
    model(torch.randn(4, 10)).sum().backward()                 # seq 6: one bucket, by the hook only
    gt.shutdown()
    del model
    dist.destroy_process_group()  # torch 1.13 may abort at exit with gloo's threads still up otherwise
    print("wrapped", dist.all_reduce.__wrapped__ is not None, flush=True)
""")


def torch_unavailable():
    if not TORCH_PYTHON:
        return "no torch interpreter given"
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch.distributed as d; assert d.is_available()"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"{TORCH_PYTHON}: {probe.stderr.strip()[-200:]}"


SKIP = torch_unavailable()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipIf(SKIP, SKIP)
class TimeCollectivesWithRealGloo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpuscope-pytorch-")
        path = os.path.join(cls.dir, "training.sock")
        cls.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        cls.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        cls.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        cls.sock.bind(path)
        script = os.path.join(cls.dir, "worker.py")
        with open(script, "w") as f:
            f.write(WORKER)
        port = str(free_port())
        workers = []
        for rank in range(2):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SLURM_", "GPUSCOPE_"))}
            env.update(RANK=str(rank), WORLD_SIZE="2", PORT=port, GPUSCOPE_TRAINING_SOCKET=path,
                       OMP_NUM_THREADS="1", PYTHONPATH=os.path.dirname(HERE))
            workers.append(subprocess.Popen([TORCH_PYTHON, script, str(N)], env=env, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT, text=True))
        cls.outputs = {}
        for rank, worker in enumerate(workers):
            out, _ = worker.communicate(timeout=240)
            if worker.returncode != 0:
                raise AssertionError(f"rank {rank} exited {worker.returncode}:\n{out}")
            cls.outputs[worker.pid] = out
        cls.pids = [w.pid for w in workers]
        # {pid: [collective record fields]} in arrival order (one socket, each process's datagrams in order).
        cls.records = {pid: [] for pid in cls.pids}
        cls.sock.setblocking(False)
        while True:
            try:
                data, ancillary, _flags, _addr = cls.sock.recvmsg(_wire.MAX_DATAGRAM,
                                                                  socket.CMSG_SPACE(CREDS.size))
            except BlockingIOError:
                break
            pid = next(CREDS.unpack(p[:CREDS.size])[0] for level, kind, p in ancillary
                       if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS)
            _drops, records = _wire.decode(data)
            cls.records[pid] += [fields for kind, fields in records if kind == _wire.COLLECTIVE]

    @classmethod
    def tearDownClass(cls):
        cls.sock.close()
        for name in os.listdir(cls.dir):
            os.unlink(os.path.join(cls.dir, name))
        os.rmdir(cls.dir)

    def by_seq(self, pid):
        """{seq: (op, bytes, nranks, comm, [(begin, end)] in arrival order)} of one rank."""
        out = {}
        for comm, seq, op, _dtype, _algo, _proto, nbytes, nranks, begin, end in self.records[pid]:
            entry = out.setdefault(seq, [op, nbytes, nranks, comm, []])
            self.assertEqual(entry[:4], [op, nbytes, nranks, comm], f"seq {seq} changed its fields")
            entry[4].append((begin, end))
        return out

    def test_each_direct_collective_has_its_op_bytes_and_seq_the_same_on_both_ranks(self):
        ops = _wire.OPS
        expected = {0: (ops["all_reduce"], 4 * N), 1: (ops["broadcast"], 4 * N), 2: (ops["all_gather"], 4 * N),
                    3: (ops["all_reduce"], 4 * N), 4: (ops["reduce_scatter"], 4 * (N // 2)),
                    5: (ops["barrier"], 0), 6: (ops["all_reduce"], 4 * (10 * 10 + 10))}
        tables = [self.by_seq(pid) for pid in self.pids]
        for table in tables:
            self.assertEqual(sorted(table), sorted(expected))
            for seq, (op, nbytes) in expected.items():
                self.assertEqual(tuple(table[seq][:3]), (op, nbytes, 2), f"seq {seq}")
        comms = {entry[3] for table in tables for entry in table.values()}
        self.assertEqual(len(comms), 1, "one communicator, the same id on both ranks")

    def test_every_completed_collective_has_an_entry_then_a_completion_record(self):
        for pid in self.pids:
            for seq, (_op, _bytes, _nranks, _comm, times) in self.by_seq(pid).items():
                if seq == 4:
                    continue  # raised: below
                with self.subTest(pid=pid, seq=seq):
                    self.assertEqual(len(times), 2, times)
                    (entered, zero), (begin, end) = times
                    self.assertEqual(zero, 0, "the first record is the entry: not completed")
                    self.assertEqual(entered, begin)
                    self.assertGreaterEqual(end, begin)

    def test_an_asynchronous_collective_completes_when_its_work_does(self):
        for pid in self.pids:
            times = self.by_seq(pid)[3][4]
            self.assertEqual([end == 0 for _begin, end in times], [True, False], times)

    def test_a_collective_that_raises_propagates_after_its_entry_record(self):
        for pid in self.pids:
            self.assertIn("reduce_scatter raised: ProcessGroupGloo does not support reduce_scatter",
                          self.outputs[pid])
            self.assertEqual([end for _begin, end in self.by_seq(pid)[4][4]], [0])

    def test_ddp_s_all_reduce_under_instrument_ddp_is_recorded_once(self):
        for pid in self.pids:
            times = self.by_seq(pid)[6][4]
            self.assertEqual(len(times), 2, "the hook's entry and completion, nothing from the wrapper")


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

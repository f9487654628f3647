"""Integration: the training_hang event from a real hang. Real PyTorch DistributedDataParallel (Debian's
python3-torch, CPU, gloo, 4 ranks on loopback, launched as torchrun launches them) instrumented with
python/gpuscope; rank 3 stops entering collectives (it sleeps before a step) and the three others wait
inside the next gradient all-reduce. The agent, with its Loki sink pointed at a real Loki-push receiver
(VictoriaLogs, the pinned peer), must ship exactly one training_hang event, for rank 3 and no other,
naming its job, node and GPU (the launcher's, at its local rank), the communicator and the sequence number
its hung gauge shows, count it once in
gpuscope_events_total{source="training",class="training_hang"}, and raise no second one while the hang
lasts.

Usage: training_hang_event_test.py AGENT SIM_LIBRARY REPO_ROOT TORCH_PYTHON VICTORIA_LOGS"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

AGENT, SIM, ROOT, TORCH_PYTHON, VICTORIA_LOGS = sys.argv[1:6]
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import harness  # noqa: E402
import peers  # noqa: E402
import unittest_main  # noqa: E402

WORLD = 4
HUNG_RANK = 3
JOB = "4711"

# Each rank trains a small model; the hung rank sleeps before its sixth step and never calls the all-reduce
# the others are waiting in.
RANK_SCRIPT = textwrap.dedent("""
    import os, time
    import torch, torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    import gpuscope.training as training
    import gpuscope.pytorch

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    net = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(),
                                                      torch.nn.Linear(128, 4)))
    gpuscope.pytorch.instrument_ddp(net)
    sgd = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(30):
        if rank == {hung} and step == 5:
            time.sleep(600)  # the test kills it
        with training.step(samples=16):
            out = net(torch.randn(16, 64))
            torch.nn.functional.mse_loss(out, torch.zeros(16, 4)).backward()
            sgd.step()
            sgd.zero_grad()
    training.shutdown()
""").format(hung=HUNG_RANK)


def hung_gauges(agent):
    """{(rank, comm): value} of gpuscope_training_rank_hung."""
    out = {}
    for (name, labels), value in harness.parse_exposition(agent.metrics()).items():
        if name == "gpuscope_training_rank_hung":
            labels = dict(labels)
            out[(labels["rank"], labels["comm"])] = value
    return out


class TrainingHangEvent(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-hang-event-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.logs = peers.VictoriaLogs(VICTORIA_LOGS)
        self.addCleanup(self.logs.cleanup)
        self.socket = os.path.join(self.dir, "training.sock")
        self.agent = harness.Agent(
            AGENT, SIM, os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml"),
            extra_args=["--collector.training", "--collector.training.interval=1s", "--training.hang-after=5s",
                        f"--training.socket={self.socket}", f"--events.state-dir={self.dir}/state",
                        f"--sink.loki.url={self.logs.loki_push_url()}"],
            env={"GPUSCOPE_SIM_KERNEL_LOG": ""})
        self.addCleanup(self.agent.cleanup)
        self.addCleanup(self.agent.stop)
        harness.wait_for(lambda: os.path.exists(self.socket), 30, "the training socket")

    def test_a_rank_that_stops_entering_collectives_is_shipped_once_as_training_hang(self):
        script = os.path.join(self.dir, "rank.py")
        with open(script, "w") as f:
            f.write(RANK_SCRIPT)
        port = str(harness.free_port())
        ranks = []
        for rank in range(WORLD):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GPUSCOPE_", "PYTHON"))}
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), LOCAL_RANK=str(rank),
                       WORLD_SIZE=str(WORLD), GPUSCOPE_TRAINING_SOCKET=self.socket, OMP_NUM_THREADS="1",
                       PYTHONPATH=os.path.join(ROOT, "python"), GPUSCOPE_JOB_ID=JOB,
                       CUDA_VISIBLE_DEVICES="4,5,6,7")  # the launcher's GPUs: rank 3 has the simulator's GPU 7
            ranks.append(subprocess.Popen([TORCH_PYTHON, script], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        try:
            entries = harness.wait_for(lambda: self.logs.query('{class="training_hang"}') or None, 120,
                                       "a training_hang event in VictoriaLogs")
            hung = {key for key, value in hung_gauges(self.agent).items() if value == 1}
            self.assertEqual({rank for rank, _ in hung}, {str(HUNG_RANK)}, hung)
            self.assertEqual(len(entries), 1, entries)
            entry = entries[0]
            self.assertEqual(entry.get("rank"), str(HUNG_RANK), entry)
            self.assertEqual(entry.get("severity"), "error", entry)
            self.assertEqual(entry.get("Hostname"), "sim-node", entry)
            self.assertEqual(entry.get("hpc_job"), JOB, entry)
            self.assertEqual(entry.get("gpu"), "7", entry)
            self.assertTrue(entry.get("UUID", "").startswith("GPU-"), entry)
            self.assertIn((entry.get("rank"), entry.get("comm")), hung, entry)
            self.assertLess(int(entry["seq"]), int(entry["furthest_seq"]), entry)
            self.assertGreaterEqual(int(entry["stalled_seconds"]), 5, entry)
            self.assertIn(f"rank {HUNG_RANK} of job {JOB} on sim-node GPU 7", entry["_msg"])
            # The hang goes on: more collections (every second) and event polls ship nothing more, and the
            # counter (published every 5 s) says one.
            time.sleep(8)
            self.assertEqual(len(self.logs.query('{class="training_hang"}')), 1)
            counted = harness.metric(self.agent, "gpuscope_events_total", source="training",
                                     **{"class": "training_hang"})
            self.assertEqual(counted, 1)
        finally:
            for process in ranks:
                process.kill()
                process.communicate()


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

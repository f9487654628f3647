"""Integration: real PyTorch DistributedDataParallel training (Debian's python3-torch, CPU, gloo, 4 ranks
on loopback, launched as torchrun launches them) instrumented with python/gpuscope, reporting to the real
agent's training collector.

- One rank's data loader is 50 ms slower per step. Every rank's step takes the same time (the others wait
  for it inside DDP's gradient all-reduce), yet the agent scores that rank lowest, from the time each rank
  spends outside collectives, and counts every step of every rank.
- One rank stops entering collectives (it sleeps before a step): the other three enter the next all-reduce
  and wait there; the agent reports the sleeping rank as hung after --training.hang-after, names its
  communicator and sequence number, and not the three that wait.

Usage: training_ddp_test.py AGENT SIM_LIBRARY REPO_ROOT TORCH_PYTHON"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

AGENT, SIM, ROOT, TORCH_PYTHON = sys.argv[1:5]
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import harness  # noqa: E402
import unittest_main  # noqa: E402

WORLD = 4
STEPS = 40
SLOW_RANK = 2

TRAIN = textwrap.dedent("""
    import os, sys, time
    import torch, torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    import gpuscope.training as gt
    import gpuscope.pytorch

    mode, steps = sys.argv[1], int(sys.argv[2])
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    torch.manual_seed(rank)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10)))
    gpuscope.pytorch.instrument_ddp(model)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        if mode == "hang" and rank == 3 and step == 10:
            time.sleep(600)  # stops entering collectives; killed by the test
        with gt.step(samples=32):
            with gt.dataloader_wait():
                if mode == "slow" and rank == {slow}:
                    time.sleep(0.05)
                x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
    dist.barrier()
    gt.shutdown()
    print("rank", rank, "done")
""").format(slow=SLOW_RANK)


def samples(agent, family):
    """{(rank, extra labels...): value} of `family`."""
    out = {}
    for (name, labels), value in harness.parse_exposition(agent.metrics()).items():
        if name == family:
            labels = dict(labels)
            out[labels["rank"] if "comm" not in labels else (labels["rank"], labels["comm"])] = value
    return out


class DistributedDataParallelTraining(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-ddp-")
        self.socket = os.path.join(self.dir, "training.sock")
        self.script = os.path.join(self.dir, "train.py")
        with open(self.script, "w") as f:
            f.write(TRAIN)
        self.agent = harness.Agent(AGENT, SIM, os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml"),
                                   extra_args=["--collector.training", "--collector.training.interval=1s",
                                               "--training.hang-after=5s", f"--training.socket={self.socket}"])
        self.addCleanup(self.agent.cleanup)
        self.addCleanup(self.agent.stop)
        harness.wait_for(lambda: os.path.exists(self.socket), 30, "the training socket")

    def launch(self, mode, steps):
        port = str(harness.free_port())
        ranks = []
        for rank in range(WORLD):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GPUSCOPE_", "PYTHON"))}
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), LOCAL_RANK=str(rank),
                       WORLD_SIZE=str(WORLD), GPUSCOPE_TRAINING_SOCKET=self.socket, OMP_NUM_THREADS="1",
                       PYTHONPATH=os.path.join(ROOT, "python"))
            ranks.append(subprocess.Popen([TORCH_PYTHON, self.script, mode, str(steps)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        return ranks

    def test_the_rank_with_the_slow_loader_scores_lowest_though_all_steps_take_as_long(self):
        ranks = self.launch("slow", STEPS)
        for process in ranks:
            out, _ = process.communicate(timeout=240)
            self.assertEqual(process.returncode, 0, out)
        steps = harness.wait_for(
            lambda: (lambda s: s if len(s) == WORLD and all(v == STEPS for v in s.values()) else None)(
                samples(self.agent, "gpuscope_training_steps_total")), 30, "every step of every rank")
        self.assertEqual(steps, {str(r): STEPS for r in range(WORLD)})
        score = samples(self.agent, "gpuscope_training_relative_score")
        slowest = min(score, key=score.get)
        self.assertEqual(slowest, str(SLOW_RANK), score)
        self.assertLess(score[str(SLOW_RANK)], 0.8, score)
        step_seconds = samples(self.agent, "gpuscope_training_step_duration_seconds_sum")
        mean = {r: step_seconds[r] / STEPS for r in step_seconds}
        self.assertLess(max(mean.values()) - min(mean.values()), 0.02,
                        f"synchronous steps take the same time on every rank: {mean}")
        wait = samples(self.agent, "gpuscope_training_dataloader_wait_seconds_total")
        self.assertGreater(wait[str(SLOW_RANK)], STEPS * 0.045, wait)
        hung = samples(self.agent, "gpuscope_training_rank_hung")
        self.assertTrue(hung and not any(hung.values()), hung)
        print(f"scores {score}; mean step seconds {mean}")

    def test_a_rank_that_stops_entering_collectives_is_hung_and_the_ones_waiting_for_it_are_not(self):
        ranks = self.launch("hang", STEPS)
        try:
            def stuck():
                hung = samples(self.agent, "gpuscope_training_rank_hung")
                return hung if any(hung.values()) else None
            hung = harness.wait_for(stuck, 120, "a hung rank")
            self.assertEqual({key[0] for key, value in hung.items() if value == 1}, {"3"}, hung)
            seq = samples(self.agent, "gpuscope_training_collective_seq")
            comm = next(key[1] for key, value in hung.items() if value == 1)
            others = [seq[(str(r), comm)] for r in range(3)]
            self.assertTrue(all(s > seq[("3", comm)] for s in others), seq)
            print(f"hung {hung}; seq {seq}")
        finally:
            for process in ranks:
                process.kill()
                process.communicate()


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""Component: ranks instrumented with the gpuscope Python package report to the real agent's training
collector, end to end (python/gpuscope -> unix datagram socket -> the agent -> /metrics).

Two rank processes, launched as torchrun launches them (RANK, WORLD_SIZE in their environment), run
synchronous-looking steps of the same length: rank 1 spends 40 ms of each 60 ms step on its own work,
rank 0 10 ms, the rest "in a collective". The agent must count every step under the rank the kernel-named
process has (and the GPU its launcher gave its local rank, with that GPU's UUID and the node's Hostname), score rank 1 as the straggler although its step time equals rank 0's, and reject a datagram
that claims a job its sender is not in. A rank the others left behind on a communicator is reported once as
a training_hang event: counted under the events counters and pushed (Loki's JSON push, read by a small
receiver here) with its rank, node, communicator, sequence numbers and how long.

Usage: training_socket_test.py AGENT SIM_LIBRARY REPO_ROOT"""

import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

AGENT, SIM, ROOT = sys.argv[1:4]
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import harness  # noqa: E402
import unittest_main  # noqa: E402
from gpuscope import _wire  # noqa: E402

STEPS = 20
RANK_SCRIPT = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    import gpuscope.training as gt
    own_work = float(sys.argv[2])
    session = gt.init()
    for step in range({steps}):
        with gt.step(samples=8):
            begin = time.time_ns()
            time.sleep(own_work)
            middle = time.time_ns()
            time.sleep(0.06 - own_work)  # the collective: waits for the slowest rank
            session.collective("all_reduce", 1 << 22, middle, time.time_ns(), comm=7, seq=step)
    gt.shutdown()
    print("sent", session.sent, "dropped", session.dropped)
""").format(steps=STEPS)


def training_samples(agent, family):
    """{(hpc_job, rank): value} of `family`."""
    out = {}
    for (name, labels), value in harness.parse_exposition(agent.metrics()).items():
        labels = dict(labels)
        if name == family:
            out[(labels.get("hpc_job", ""), labels.get("rank", ""))] = value
    return out


def rejected(agent, reason):
    for (name, labels), value in harness.parse_exposition(agent.metrics()).items():
        if name == "gpuscope_training_records_rejected_total" and dict(labels).get("reason") == reason:
            return value
    return None


class TrainingSocket(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-training-")
        self.socket = os.path.join(self.dir, "training.sock")
        self.agent = harness.Agent(AGENT, SIM, os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml"),
                                   extra_args=["--collector.training", "--collector.training.interval=1s",
                                               f"--training.socket={self.socket}"])
        self.addCleanup(self.agent.cleanup)
        self.addCleanup(self.agent.stop)
        harness.wait_for(lambda: os.path.exists(self.socket), 30, "the training socket")

    def test_two_ranks_are_counted_and_the_slow_one_is_named_by_its_own_work(self):
        script = os.path.join(self.dir, "rank.py")
        with open(script, "w") as f:
            f.write(RANK_SCRIPT)
        ranks = []
        for rank, own_work in ((0, 0.010), (1, 0.040)):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RANK", "GPUSCOPE_"))}
            env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", GPUSCOPE_TRAINING_SOCKET=self.socket,
                       CUDA_VISIBLE_DEVICES="5,6")
            ranks.append(subprocess.Popen([sys.executable, script, os.path.join(ROOT, "python"), str(own_work)],
                                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        for process in ranks:
            out, _ = process.communicate(timeout=60)
            self.assertEqual(process.returncode, 0, out)
            self.assertIn(f"sent {2 * STEPS} dropped 0", out)  # a step and a collective each

        steps = harness.wait_for(
            lambda: (lambda s: s if s.get(("", "0")) == STEPS and s.get(("", "1")) == STEPS else None)(
                training_samples(self.agent, "gpuscope_training_steps_total")), 30, "every step counted")
        self.assertEqual(steps, {("", "0"): STEPS, ("", "1"): STEPS})
        score = training_samples(self.agent, "gpuscope_training_relative_score")
        self.assertEqual(score[("", "0")], 1.0)
        self.assertLess(score[("", "1")], 0.5, score)  # own work 10 vs 40 ms: about 0.25
        self.assertGreater(score[("", "1")], 0.1, score)
        # No simulated GPU runs these processes: the GPU is the launcher's list at the local rank.
        gpus = {}
        for (name, labels), _ in harness.parse_exposition(self.agent.metrics()).items():
            labels = dict(labels)
            if name == "gpuscope_training_steps_total":
                gpus[labels["rank"]] = (labels["gpu"], labels["UUID"].startswith("GPU-"), labels["Hostname"])
        self.assertEqual(gpus, {"0": ("5", True, "sim-node"), "1": ("6", True, "sim-node")})
        step_seconds = training_samples(self.agent, "gpuscope_training_step_duration_seconds_sum")
        self.assertAlmostEqual(step_seconds[("", "0")] / STEPS, step_seconds[("", "1")] / STEPS, delta=0.02,
                               msg="the step time cannot tell the straggler")

    def test_a_datagram_claiming_a_job_its_sender_is_not_in_is_rejected(self):
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sender.close)
        before = harness.wait_for(lambda: [rejected(self.agent, "identity")] if rejected(self.agent, "identity")
                                  is not None else None, 30, "the training self-metrics")[0]
        claim = _wire.datagram([_wire.hello(0, 0, 1, "999999"), _wire.step(0, 1, 2, 3)], 0)
        sender.sendto(claim, self.socket)
        sender.sendto(b"GPST\x01garbage", self.socket)
        harness.wait_for(lambda: rejected(self.agent, "identity") == before + 1, 30, "the identity rejection")
        harness.wait_for(lambda: rejected(self.agent, "malformed") == 1, 30, "the malformed datagram counted")
        self.assertEqual(training_samples(self.agent, "gpuscope_training_steps_total"), {})


class LokiJsonReceiver:
    """Takes Loki JSON pushes on 127.0.0.1 and keeps every entry as (stream labels, line, metadata)."""

    def __init__(self):
        entries = self.entries = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                for stream in body.get("streams", []):
                    for value in stream.get("values", []):
                        entries.append((stream.get("stream", {}), value[1], value[2] if len(value) > 2 else {}))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/loki/api/v1/push"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def hang_events(agent, **labels):
    return harness.metric(agent, "gpuscope_events_total", source="training", **{"class": "training_hang"}, **labels)


class TrainingHangEvent(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-training-hang-")
        self.socket = os.path.join(self.dir, "training.sock")
        self.loki = LokiJsonReceiver()
        self.addCleanup(self.loki.stop)
        self.agent = harness.Agent(AGENT, SIM, os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml"),
                                   extra_args=["--collector.training", "--collector.training.interval=1s",
                                               f"--training.socket={self.socket}", "--training.hang-after=2s",
                                               f"--events.state-dir={self.dir}/state",
                                               "--events.poll-interval=250ms",
                                               f"--sink.loki.url={self.loki.url}", "--sink.loki.format=json"])
        self.addCleanup(self.agent.cleanup)
        self.addCleanup(self.agent.stop)
        harness.wait_for(lambda: os.path.exists(self.socket), 30, "the training socket")

    def test_a_rank_the_others_left_behind_raises_one_training_hang_event(self):
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sender.close)

        def send(rank, seqs):
            now = time.time_ns()
            records = [_wire.hello(rank, rank, 2, "")]
            records += [_wire.collective(0xAB, seq, _wire.OPS["all_reduce"], 1 << 20, 2, now, now + 1000)
                        for seq in seqs]
            sender.sendto(_wire.datagram(records, 0), self.socket)

        # This process has no rank in its environment: the agent takes the rank each hello claims.
        send(0, range(0, 12))
        send(1, range(0, 9))  # rank 1 stops after seq 8; rank 0 went on to 11
        entry = harness.wait_for(
            lambda: next((e for e in self.loki.entries if e[2].get("rank") == "1"), None), 30,
            "the training_hang entry at the Loki receiver")
        labels, line, metadata = entry
        self.assertIn("training_hang", json.dumps(labels), labels)
        self.assertIn("rank 1", line)
        self.assertIn("has not passed collective seq 8 (all_reduce)", line)
        self.assertEqual(metadata.get("comm"), "0x00000000000000ab", metadata)
        self.assertEqual(metadata.get("seq"), "8", metadata)
        self.assertEqual(metadata.get("furthest_seq"), "11", metadata)
        self.assertEqual(metadata.get("Hostname"), "sim-node", metadata)
        self.assertGreaterEqual(int(metadata.get("stalled_seconds", "0")), 2, metadata)
        harness.wait_for(lambda: hang_events(self.agent, severity="error") == 1 or None, 30,
                         "the event counted (the events collector publishes every 5 s)")
        # Once per episode: more collection cycles (1 s each) and a new publication raise nothing new.
        time.sleep(6)
        self.assertEqual(hang_events(self.agent), 1)
        self.assertEqual(len([e for e in self.loki.entries if "training_hang" in e[1]]), 1)
        # Rank 1 moves on to 10 and stalls there while rank 0 is at 11: a new episode.
        send(1, [9, 10])
        harness.wait_for(
            lambda: hang_events(self.agent) == 2 or None, 30,
            "the second episode")


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""Integration: training traces (issue 12) from the agent's training collector into a real OpenTelemetry
Collector (its OTLP receiver and file exporter, built from pinned modules by scripts/build-peers.sh) on
loopback. A producer process (python/gpuscope's wire encoder, run with the environment a launcher gives a
rank: RANK, LOCAL_RANK, CUDA_VISIBLE_DEVICES, GPUSCOPE_JOB_ID) sends twelve steps of 100 ms, two of them
400 ms, each with two all-reduces (an entry record, then a completion record; one collective of a slow
step never completes). Proves, decoding the Collector's OTLP/JSON field by field:
  - by default only the slow steps are traced (1.5x the rank's median), each as a step span whose trace id
    is SHA-256 over the job and step as trace_ids.cc derives it (computed here independently with hashlib),
    with the rank's identity as the agent established it from the kernel (job, rank, GPU 2 and its UUID),
    its samples and its time outside and inside collectives, and a child span per collective (parent id,
    span id, communicator, sequence, op, bytes, ranks, algorithm, protocol, times), the one never
    completed with an ERROR status saying so;
  - --training.traces=all traces every step;
  - spans made while the Collector is down are queued and arrive once when it is back.

Usage: training_traces_test.py AGENT SIM_LIBRARY OTELCOL REPO_ROOT"""

import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
from harness import metric  # noqa: E402
import peers  # noqa: E402

AGENT, SIM, OTELCOL, ROOT = sys.argv[1:5]
SCENARIO = os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml")
JOB, RANK, WORLD = "7777", 1, 4
COMM = 0xABC
MS = 1_000_000
STEP_MS = [100] * 12
SLOW = {8: 400, 10: 400}
for _step, _ms in SLOW.items():
    STEP_MS[_step] = _ms
NEVER_COMPLETED = (10, 1)  # (step, which all-reduce of it)
ALLREDUCE_BYTES = 64 << 20

# The producer: one datagram per step, every record as python/gpuscope/_wire.py encodes it. Each step
# spends its first 60% computing, then runs two all-reduces of 20% each (entered, then completed with the
# NCCL plugin's algorithm and protocol codes: 2 ring, 3 Simple).
PRODUCER = r"""
import socket, struct, sys
sys.path.insert(0, sys.argv[1])
from gpuscope import _wire
path, job, rank, world, comm, nbytes, never_step, never_which = sys.argv[2], sys.argv[3], *map(int, sys.argv[4:10])
steps = [(int(a), int(b), int(c)) for a, b, c in (s.split(":") for s in sys.argv[10:])]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
hello = _wire.hello(rank, 0, world, job)
for number, begin, end in steps:
    records = []
    length = end - begin
    for which in range(2):
        seq = 2 * number + which
        c_begin = begin + length * (6 + 2 * which) // 10
        c_end = begin + length * (8 + 2 * which) // 10
        records.append(_wire.collective(comm, seq, 4, nbytes, world, c_begin, 0, algo=2, proto=3))
        if (number, which) != (never_step, never_which):
            records.append(_wire.collective(comm, seq, 4, nbytes, world, c_begin, c_end, algo=2, proto=3))
    records.append(_wire.step(number, begin, end, 32))
    sock.sendto(_wire.datagram([hello] + records, 0), path)
print("sent", flush=True)
sys.stdin.read()  # alive until the test has seen the agent take every datagram: the agent reads /proc/<pid>
"""


def leading(digest, size):
    out = digest[:size]
    if out == bytes(size):
        out = out[:-1] + b"\x01"
    return out.hex()


def sha(tag, *parts):
    h = hashlib.sha256(tag)
    for part in parts:
        h.update(struct.pack("<Q", len(part)))
        h.update(part)
    return h.digest()


def step_trace_id(job, step):
    return leading(sha(b"gpuscope.training.step-trace", job.encode(), struct.pack("<Q", step)), 16)


def step_span_id(job, step, rank):
    return leading(sha(b"gpuscope.training.step-span", job.encode(), struct.pack("<Q", step),
                       struct.pack("<i", rank)), 8)


def collective_span_id(job, rank, comm, seq):
    return leading(sha(b"gpuscope.training.collective-span", job.encode(), struct.pack("<i", rank),
                       struct.pack("<Q", comm), struct.pack("<Q", seq)), 8)


def typed(key_values):
    """OTLP/JSON attributes as {key: python value}: intValue (a decimal string) as int."""
    out = {}
    for kv in key_values:
        (kind, value), = kv["value"].items()
        out[kv["key"]] = int(value) if kind == "intValue" else value
    return out


class TrainingTracesIntoOtelcol(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-traces-test-")
        self.socket = os.path.join(self.workdir, "training.sock")
        self.collector = peers.OtelCollector(OTELCOL)
        self.agent = None

    def tearDown(self):
        failed = harness.failed(self)
        if self.agent is not None:
            self.agent.finish(show_log=failed)
        if failed:
            print(f"--- otelcol log ---\n{self.collector.read_log()[-4000:]}", file=sys.stderr)
        self.collector.cleanup()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def start_agent(self, *extra):
        self.agent = harness.Agent(
            AGENT, SIM, SCENARIO,
            extra_args=["--no-collector.host", "--no-collector.infiniband", "--collector.training",
                        "--collector.training.interval=500ms", "--training.socket", self.socket,
                        "--events.state-dir", os.path.join(self.workdir, "state"),
                        "--sink.otlp.traces-url", self.collector.url + "/v1/traces", *extra])
        harness.wait_for(lambda: os.path.exists(self.socket), 30, "the training socket")

    def produce(self, first_begin_ns):
        """Sends the twelve steps back to back from first_begin_ns; returns {step: (begin, end)}."""
        steps, at = {}, first_begin_ns
        for number, ms in enumerate(STEP_MS):
            steps[number] = (at, at + ms * MS)
            at += ms * MS
        env = dict(os.environ, RANK=str(RANK), LOCAL_RANK="0", WORLD_SIZE=str(WORLD), GPUSCOPE_JOB_ID=JOB,
                   CUDA_VISIBLE_DEVICES="2")
        env.pop("SLURM_JOB_ID", None)
        before = metric(self.agent, "gpuscope_training_datagrams_total") or 0
        producer = subprocess.Popen(
            [sys.executable, "-c", PRODUCER, os.path.join(ROOT, "python"), self.socket, JOB, str(RANK), str(WORLD),
             str(COMM), str(ALLREDUCE_BYTES), *map(str, NEVER_COMPLETED),
             *(f"{n}:{b}:{e}" for n, (b, e) in steps.items())], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(producer.stdout.readline().strip(), "sent")
            harness.wait_for(lambda: (metric(self.agent, "gpuscope_training_datagrams_total") or 0)
                             >= before + len(STEP_MS), 30, "the agent to take every datagram")
        finally:
            producer.communicate("", timeout=30)
        self.assertEqual(producer.returncode, 0)
        rejected = harness.parse_exposition(self.agent.metrics())
        self.assertEqual(sum(v for (n, _), v in rejected.items() if n == "gpuscope_training_records_rejected_total"),
                         0)
        return steps

    def wait_for_spans(self, count):
        return harness.wait_for(lambda: (lambda spans: spans if len(spans) >= count else None)(
            self.collector.spans()), 60, f"{count} spans in the Collector's file")

    def check_step(self, step, begin, end, spans_by_id, resource):
        """The step span and its two collectives' spans, field by field."""
        trace = step_trace_id(JOB, step)
        step_id = step_span_id(JOB, step, RANK)
        span = spans_by_id[step_id]
        self.assertEqual(resource, {"service.name": "gpuscope-agent", "host.name": "sim-node"})
        self.assertEqual(span["traceId"], trace)
        self.assertEqual(span["name"], "train.step")
        self.assertNotIn("parentSpanId", span)
        self.assertEqual(span["kind"], 1)  # SPAN_KIND_INTERNAL
        self.assertEqual((int(span["startTimeUnixNano"]), int(span["endTimeUnixNano"])), (begin, end))
        a = typed(span["attributes"])
        self.assertEqual((a["hpc_job"], a["rank"], a["step"], a["samples"]), (JOB, RANK, step, 32))
        self.assertEqual((a["Hostname"], a["gpu"]), ("sim-node", "2"))
        self.assertRegex(a["UUID"], r"^GPU-[0-9a-f-]+$")
        seconds = (end - begin) / 1e9
        completed = 1 if step == NEVER_COMPLETED[0] else 2
        self.assertAlmostEqual(a["gpuscope.collective_seconds"], 0.2 * seconds * completed, places=6)
        self.assertAlmostEqual(a["gpuscope.compute_seconds"], seconds - 0.2 * seconds * completed, places=6)
        self.assertEqual(a["gpuscope.collectives"], 2)
        if step in SLOW:
            self.assertEqual(a["gpuscope.traced"], "slow")
            self.assertAlmostEqual(a["gpuscope.median_step_seconds"], 0.1, places=6)
        for which in range(2):
            seq = 2 * step + which
            child = spans_by_id[collective_span_id(JOB, RANK, COMM, seq)]
            self.assertEqual(child["traceId"], trace)
            self.assertEqual(child["parentSpanId"], step_id)
            self.assertEqual(child["name"], "collective.all_reduce")
            c_begin = begin + (end - begin) * (6 + 2 * which) // 10
            c_end = begin + (end - begin) * (8 + 2 * which) // 10
            c = typed(child["attributes"])
            self.assertEqual(c, {"hpc_job": JOB, "rank": RANK, "comm": "0x0000000000000abc", "seq": seq,
                                 "op": "all_reduce", "bytes": ALLREDUCE_BYTES, "nranks": WORLD, "algo": "ring",
                                 "proto": "Simple"})
            self.assertEqual(int(child["startTimeUnixNano"]), c_begin)
            if (step, which) == NEVER_COMPLETED:
                self.assertEqual(int(child["endTimeUnixNano"]), end)  # ends with the step
                self.assertEqual(child["status"]["code"], 2)  # STATUS_CODE_ERROR
                self.assertIn("no completion reported", child["status"]["message"])
            else:
                self.assertEqual(int(child["endTimeUnixNano"]), c_end)
                self.assertEqual(child.get("status", {}), {})

    def test_only_slow_steps_become_spans_that_decode_field_by_field(self):
        self.start_agent()
        steps = self.produce(time.time_ns() - 10 * 10**9)
        received = self.wait_for_spans(6)
        # Every step record was taken before this wait began: no other step became a span.
        self.assertEqual(metric(self.agent, "gpuscope_training_spans_total"), 6)
        self.assertEqual(len(received), 6, "two slow steps, each with its two all-reduces")
        spans_by_id = {span["spanId"]: span for _, _, span in received}
        self.assertEqual(len(spans_by_id), 6, "a span received twice")
        traced = sorted(typed(s["attributes"])["step"] for s in spans_by_id.values() if s["name"] == "train.step")
        self.assertEqual(traced, sorted(SLOW))
        for resource, scope, _ in received:
            self.assertEqual(scope.get("name"), "gpuscope")
            self.assertTrue(scope.get("version"))
        for step in SLOW:
            self.check_step(step, *steps[step], spans_by_id, received[0][0])
        self.assertEqual(metric(self.agent, "gpuscope_training_traced_steps_total"), 2)
        harness.wait_for(lambda: metric(self.agent, "gpuscope_sink_sent_records_total", sink="otlp_traces") == 6,
                         30, "the six spans counted as sent")

    def test_all_traces_every_step(self):
        self.start_agent("--training.traces=all")
        steps = self.produce(time.time_ns() - 10 * 10**9)
        received = self.wait_for_spans(3 * len(STEP_MS))
        spans_by_id = {span["spanId"]: span for _, _, span in received}
        self.assertEqual(len(received), 3 * len(STEP_MS))
        self.assertEqual(len(spans_by_id), len(received))
        for step, (begin, end) in steps.items():
            self.check_step(step, begin, end, spans_by_id, received[0][0])
        fast = typed(spans_by_id[step_span_id(JOB, 9, RANK)]["attributes"])
        self.assertEqual(fast["gpuscope.traced"], "all")

    def test_spans_made_while_the_collector_is_down_arrive_once_when_it_is_back(self):
        self.start_agent("--training.traces=all")
        self.collector.stop()
        self.produce(time.time_ns() - 10 * 10**9)
        total = 3 * len(STEP_MS)
        harness.wait_for(lambda: metric(self.agent, "gpuscope_queue_records", queue="otlp_traces",
                                        consumer="otlp_traces") == total, 60, "the spans queued")
        harness.wait_for(lambda: (metric(self.agent, "gpuscope_sink_failed_requests_total", sink="otlp_traces")
                                  or 0) >= 2, 30, "the traces sink retrying against a stopped Collector")
        self.collector.start()
        harness.wait_for(lambda: metric(self.agent, "gpuscope_queue_records", queue="otlp_traces",
                                        consumer="otlp_traces") == 0, 120, "the queue drained")
        received = self.wait_for_spans(total)
        ids = [span["spanId"] for _, _, span in received]
        self.assertEqual(len(ids), total)
        self.assertEqual(len(set(ids)), total, "a span received twice")
        self.assertEqual(set(ids), {step_span_id(JOB, s, RANK) for s in range(len(STEP_MS))} |
                         {collective_span_id(JOB, RANK, COMM, q) for q in range(2 * len(STEP_MS))})


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[5:])

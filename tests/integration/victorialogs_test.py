"""Integration: the agent's Loki sink against a real Loki-push receiver, VictoriaLogs (built from the
pinned module by scripts/build-peers.sh), on loopback. The agent (on the NVML simulator) tails a job log
and the simulator's kernel log; the test reads the events back through VictoriaLogs' LogsQL query API.
Proves, for protobuf+snappy and for JSON: every shipped event is stored once, with the stream labels
host/source/class/severity, the structured metadata (hpc_job, gpu, UUID, xid, origin) as fields, and the
line as the message; timestamps follow file order within each stream; XIDs that NVML and the kernel log
both see count once. And, for both formats, with VictoriaLogs stopped (connection refused) while events
are produced and started again on the same data directory, every event arrives exactly once. And a
FIFO and a /dev/zero symlink in the tailer's glob are skipped, counted and logged once, while the regular
file beside them still ships.

Usage: victorialogs_test.py AGENT SIM_LIBRARY VICTORIA_LOGS REPO_ROOT"""

import datetime
import os
import re
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
from event_corpus import SEQ, numbered_line  # noqa: E402
from harness import append, metric  # noqa: E402
import event_corpus  # noqa: E402
import peers  # noqa: E402

AGENT, SIM, VICTORIA_LOGS, ROOT = sys.argv[1:5]
SCENARIOS = os.path.join(ROOT, "sim", "scenarios")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
STREAM_LABELS = ("class", "host", "severity", "source")


def time_ns(entry):
    """VictoriaLogs' _time (RFC 3339, UTC, up to nanoseconds) as Unix nanoseconds."""
    stamp = entry["_time"].rstrip("Z")
    seconds, _, fraction = stamp.partition(".")
    whole = datetime.datetime.fromisoformat(seconds).replace(tzinfo=datetime.timezone.utc)
    return int(whole.timestamp()) * 1_000_000_000 + int((fraction or "0").ljust(9, "0"))


def stream_labels(entry):
    """The stream labels VictoriaLogs keeps for an entry, from its _stream ({name="value",...}). The
    fields of the same names may differ: structured metadata shares their namespace in VictoriaLogs."""
    return dict(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', entry["_stream"]))


def stream_of(entry):
    return tuple(sorted(stream_labels(entry).items()))


class LokiPushIntoVictoriaLogs(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-victorialogs-test-")
        self.jobs = os.path.join(self.workdir, "jobs")
        os.makedirs(self.jobs)
        self.job_log = os.path.join(self.jobs, "slurm-4242.out")
        self.kernel_log = os.path.join(self.workdir, "kern.log")
        self.receiver = peers.VictoriaLogs(VICTORIA_LOGS)
        self.agent = None

    def tearDown(self):
        failed = harness.failed(self)
        if self.agent is not None:
            self.agent.finish(show_log=failed)
        if failed:
            print(f"--- victoria-logs log ---\n{self.receiver.read_log()[-4000:]}", file=sys.stderr)
        self.receiver.cleanup()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def start_agent(self, loki_format, scenario="h100-training.yaml", env=None):
        scenario_path = (os.path.join(FIXTURES, "events_e2e", scenario) if scenario == "xid-merge.yaml"
                         else os.path.join(SCENARIOS, scenario))
        environment = {"GPUSCOPE_SIM_KERNEL_LOG": ""}
        environment.update(env or {})
        self.agent = harness.Agent(
            AGENT, SIM, scenario_path, env=environment,
            extra_args=["--no-collector.host", "--no-collector.infiniband",
                        "--events.state-dir", os.path.join(self.workdir, "state"), "--events.poll-interval", "100ms",
                        "--events.file", os.path.join(self.jobs, "slurm-*.out"), "--events.file", self.kernel_log,
                        "--sink.loki.url", self.receiver.loki_push_url(), "--sink.loki.format", loki_format])

    def shipped_and_acknowledged(self):
        """Events handed to the queue (the Loki sink is its only consumer) once the sink has acknowledged every
        record; else None."""
        if metric(self.agent, "gpuscope_queue_records", queue="events", consumer="loki") != 0:
            return None
        return metric(self.agent, "gpuscope_events_shipped_total")

    def assert_time_follows_order(self, entries, key):
        """Within each stream, the entries' timestamps never go back along the order given by key."""
        per_stream = {}
        for entry in sorted(entries, key=key):
            per_stream.setdefault(stream_of(entry), []).append(time_ns(entry))
        for stream, times in per_stream.items():
            self.assertEqual(times, sorted(times), f"stream {stream}: timestamps out of file order")

    def check_every_class(self, loki_format):
        self.start_agent(loki_format, scenario="xid-merge.yaml", env={"GPUSCOPE_SIM_KERNEL_LOG": self.kernel_log})
        corpus = event_corpus.read_corpus(FIXTURES)
        for name in event_corpus.CORPUS_CLASSES:  # one write per fixture file: several polls, several pushes
            append(self.job_log, "".join(line + "\n" for n, line in corpus if n == name))
        gpu_runs = {}

        def stored():
            shipped = self.shipped_and_acknowledged()
            read = metric(self.agent, "gpuscope_event_lines_total", source="file") or 0
            nvml_only = metric(self.agent, "gpuscope_xid_errors_total", gpu="6", xid="43")
            if not shipped or read < len(corpus) + 2 or nvml_only != 1:
                return None
            entries = self.receiver.query("*")
            kernel = [e for e in entries if e.get("origin") == self.kernel_log]
            if len(entries) != shipped or len(kernel) != 2:
                return None
            # Two more GPU collections after that: an XID counted twice would show by then.
            runs = metric(self.agent, "gpuscope_collector_runs_total", collector="gpu")
            gpu_runs.setdefault("at", runs)
            return entries if runs >= gpu_runs["at"] + 2 else None

        entries = harness.wait_for(stored, 90, "every shipped event stored in VictoriaLogs, the XIDs counted")
        self.assertEqual(metric(self.agent, "gpuscope_sink_failed_requests_total", sink="loki") or 0, 0)
        # Shipped = every classified event at or above the ship severity (info): debug NCCL lines stay home.
        classified = harness.parse_exposition(self.agent.metrics())
        at_or_above_info = sum(v for (n, ls), v in classified.items()
                               if n == "gpuscope_events_total" and dict(ls)["severity"] != "debug")
        self.assertEqual(len(entries), at_or_above_info)

        from_job_log = [e for e in entries if e.get("origin") == self.job_log]
        self.assertEqual(len(from_job_log), len(entries) - 2)
        allowed = event_corpus.allowed_classes(corpus)
        position = {}
        for i, (_, line) in enumerate(corpus):
            position.setdefault(line, i)
        for entry in from_job_log:
            with self.subTest(line=entry["_msg"][:80]):
                self.assertIn(entry["_msg"], allowed, "a message that is not a corpus line")
                stream = stream_labels(entry)
                self.assertEqual(sorted(stream), sorted(STREAM_LABELS))
                self.assertIn(stream["class"], allowed[entry["_msg"]])
                self.assertEqual(stream["host"], "sim-node")
                self.assertEqual(stream["source"], "file")
                self.assertIn(stream["severity"], {"info", "warning", "error", "critical"})
                self.assertIn(entry["hpc_job"], event_corpus.jobs_named(entry["_msg"], "4242"))
        self.assertEqual({stream_labels(e)["class"] for e in entries}, event_corpus.ALL_CLASSES)
        by_class = {stream_labels(e)["class"]: e for e in from_job_log}
        self.assertEqual(by_class["cuda_oom"]["hpc_job"], "4242")
        # Each corpus event once: no line stored twice (the corpus has no repeated event line).
        messages = [e["_msg"] for e in from_job_log]
        self.assertEqual(len(messages), len(set(messages)))
        self.assert_time_follows_order(from_job_log, key=lambda e: position[e["_msg"]])

        # The simulator's kernel-log XIDs carry the GPU, its UUID and the XID as fields, and are counted
        # once although NVML reports them too (GPU 6's XID 43 is NVML's alone: the proof NVML is reporting).
        kernel = {e["xid"]: e for e in entries if e.get("origin") == self.kernel_log}
        self.assertEqual(set(kernel), {"13", "31"})
        self.assertEqual((kernel["13"]["gpu"], kernel["31"]["gpu"]), ("2", "5"))
        for xid, entry in kernel.items():
            with self.subTest(xid=xid):
                labels = stream_labels(entry)
                self.assertEqual((labels["class"], labels["host"], labels["source"]), ("xid", "sim-node", "file"))
                self.assertIn(labels["severity"], {"warning", "error", "critical"})
                self.assertRegex(entry["UUID"], r"^GPU-[0-9a-f-]+$")
                self.assertIn("Xid", entry["_msg"])
        for gpu, xid in (("2", "13"), ("5", "31"), ("6", "43")):
            with self.subTest(gpu=gpu, xid=xid):
                samples = [(dict(ls), v) for (n, ls), v in classified.items()
                           if n == "gpuscope_xid_errors_total" and dict(ls).get("gpu") == gpu]
                self.assertEqual([(s["xid"], v) for s, v in samples], [(xid, 1.0)])
                if xid != "43":
                    self.assertEqual(samples[0][0]["UUID"], kernel[xid]["UUID"])
        # LogsQL over the structured metadata and the stream selects the same entries.
        self.assertEqual(len(self.receiver.query('xid:="13" AND gpu:="2"')), 1)
        self.assertEqual(len(self.receiver.query('{class="cuda_oom"} hpc_job:="4242"')),
                         len([e for e in from_job_log if stream_labels(e)["class"] == "cuda_oom"]))

    def test_protobuf_push_stores_every_event_with_labels_and_metadata_in_order(self):
        self.check_every_class("protobuf")

    def test_json_push_stores_every_event_with_labels_and_metadata_in_order(self):
        self.check_every_class("json")

    def test_protobuf_events_produced_while_victorialogs_is_down_arrive_once_after_restart(self):
        self.check_outage("protobuf")

    def test_json_events_produced_while_victorialogs_is_down_arrive_once_after_restart(self):
        self.check_outage("json")

    def check_outage(self, loki_format):
        events = 2500  # more than one batch (1000 records)
        self.start_agent(loki_format)
        append(self.job_log, numbered_line(0) + "\n")
        harness.wait_for(lambda: len(self.receiver.query("e2e-seq")) == 1, 30, "the first event stored")
        self.receiver.stop()
        append(self.job_log, "".join(numbered_line(i) + "\n" for i in range(1, events)))
        harness.wait_for(lambda: metric(self.agent, "gpuscope_queue_records", queue="events", consumer="loki")
                         == events - 1, 60, "the events queued while VictoriaLogs is down")
        harness.wait_for(lambda: (metric(self.agent, "gpuscope_sink_failed_requests_total", sink="loki") or 0) >= 2,
                         30, "the Loki sink retrying against a stopped VictoriaLogs")
        self.receiver.start()

        def all_stored():
            if self.shipped_and_acknowledged() is None:
                return None
            entries = self.receiver.query("e2e-seq")
            return entries if len(entries) >= events else None

        entries = harness.wait_for(all_stored, 120, f"all {events} events stored after the restart")
        numbers = sorted(int(SEQ.search(e["_msg"]).group(1)) for e in entries)
        self.assertEqual(numbers, list(range(events)), "every event exactly once")
        self.assertEqual({stream_labels(e)["class"] for e in entries}, {"nccl", "cuda"})
        self.assert_time_follows_order(entries, key=lambda e: int(SEQ.search(e["_msg"]).group(1)))

    def stored_numbers(self):
        return sorted(int(SEQ.search(e["_msg"]).group(1)) for e in self.receiver.query("e2e-seq"))

    def test_fifo_and_device_symlink_in_the_glob_are_skipped_counted_and_logged_once(self):
        """A FIFO without a writer would block open() and /dev/zero never ends: the agent opens neither,
        counts each once by reason, logs each once, and still ships the regular file beside them."""
        os.mkfifo(os.path.join(self.jobs, "slurm-fifo.out"))
        os.symlink("/dev/zero", os.path.join(self.jobs, "slurm-zero.out"))
        append(self.job_log, numbered_line(0) + "\n")
        self.start_agent("protobuf")
        harness.wait_for(lambda: self.stored_numbers() == [0], 30, "the event of the regular file")
        harness.wait_for(lambda: metric(self.agent, "gpuscope_event_files_skipped_total", reason="fifo") == 1
                         and metric(self.agent, "gpuscope_event_files_skipped_total", reason="device") == 1,
                         30, "the FIFO and the /dev/zero symlink counted as skipped")
        append(self.job_log, numbered_line(1) + "\n")
        harness.wait_for(lambda: self.stored_numbers() == [0, 1], 30, "a later event of the regular file")
        time.sleep(0.5)  # several more polls (100 ms) of the same paths
        log = self.agent.read_log()
        self.assertEqual(log.count("event file skipped"), 2, log[-2000:])
        self.assertIn("reason=fifo", log)
        self.assertIn("reason=device", log)
        self.assertEqual(metric(self.agent, "gpuscope_event_files_skipped_total", reason="fifo"), 1)
        self.assertEqual(self.agent.stop(), 0, "SIGTERM with a FIFO in the glob")
        self.agent.cleanup()
        self.agent = None


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[5:])

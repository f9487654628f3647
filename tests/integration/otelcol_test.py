"""Integration: the agent's OTLP logs sink against a real OpenTelemetry Collector (its OTLP receiver and
file exporter, built from pinned modules by scripts/build-peers.sh) on loopback. The agent (on the NVML
simulator) tails a job log and the simulator's kernel log; the test reads the log records the Collector
decoded from the file exporter's JSON lines. Proves: every shipped event arrives once as a log record
with the body, timestamp, severity text and number, the attributes event.class, event.summary,
log.source, log.file.path, hpc_job, gpu, UUID and the classifier's fields under gpuscope.*, under one
resource (service.name, host.name) and the agent's scope version, in file order; and with the Collector
stopped (connection refused) while events are produced and started again, every event arrives exactly
once, in order.

Usage: otelcol_test.py AGENT SIM_LIBRARY OTELCOL REPO_ROOT"""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
from event_corpus import SEQ, numbered_line  # noqa: E402
from harness import append, metric  # noqa: E402
import event_corpus  # noqa: E402
import peers  # noqa: E402

AGENT, SIM, OTELCOL, ROOT = sys.argv[1:5]
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# OTLP SeverityNumber of each event severity (the lowest number of each OTLP range).
SEVERITY_NUMBER = {"info": 9, "warning": 13, "error": 17, "critical": 21}


class OtlpLogsIntoOtelcol(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-otelcol-test-")
        self.jobs = os.path.join(self.workdir, "jobs")
        os.makedirs(self.jobs)
        self.job_log = os.path.join(self.jobs, "slurm-4242.out")
        self.kernel_log = os.path.join(self.workdir, "kern.log")
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

    def test_every_event_arrives_as_a_log_record_with_its_attributes_and_resource(self):
        self.agent = harness.Agent(
            AGENT, SIM, os.path.join(FIXTURES, "events_e2e", "xid-merge.yaml"),
            env={"GPUSCOPE_SIM_KERNEL_LOG": self.kernel_log},
            extra_args=["--no-collector.host", "--no-collector.infiniband",
                        "--events.state-dir", os.path.join(self.workdir, "state"), "--events.poll-interval", "100ms",
                        "--events.file", os.path.join(self.jobs, "slurm-*.out"), "--events.file", self.kernel_log,
                        "--sink.otlp.url", self.collector.url + "/v1/logs"])
        corpus = event_corpus.read_corpus(FIXTURES)
        for name in event_corpus.CORPUS_CLASSES:  # one write per fixture file: several polls, several pushes
            append(self.job_log, "".join(line + "\n" for n, line in corpus if n == name))

        def received():
            if metric(self.agent, "gpuscope_queue_records", queue="events", consumer="otlp") != 0:
                return None
            shipped = metric(self.agent, "gpuscope_events_shipped_total")
            read = metric(self.agent, "gpuscope_event_lines_total", source="file") or 0
            records = self.collector.log_records()
            kernel = [r for _, _, r in records
                      if peers.attributes(r["attributes"]).get("log.file.path") == self.kernel_log]
            if not shipped or read < len(corpus) + 2 or len(kernel) < 2:
                return None
            return records if len(records) == shipped else None

        records = harness.wait_for(received, 90, "every shipped event in the Collector's file")
        self.assertEqual(metric(self.agent, "gpuscope_sink_failed_requests_total", sink="otlp") or 0, 0)

        # Shipped = every classified event at or above the ship severity (info): debug NCCL lines stay home.
        at_or_above_info = sum(v for (n, ls), v in harness.parse_exposition(self.agent.metrics()).items()
                               if n == "gpuscope_events_total" and dict(ls)["severity"] != "debug")
        self.assertEqual(len(records), at_or_above_info)
        allowed = event_corpus.allowed_classes(corpus)
        position = {}
        for i, (_, line) in enumerate(corpus):
            position.setdefault(line, i)
        from_job_log = []
        for resource, scope, record in records:
            attributes = peers.attributes(record["attributes"])
            with self.subTest(body=record["body"]["stringValue"][:80]):
                self.assertEqual(resource, {"service.name": "gpuscope-agent", "host.name": "sim-node"})
                self.assertTrue(scope.get("version"), "the agent's version as the scope's")
                self.assertIn(record["severityText"], SEVERITY_NUMBER)
                self.assertEqual(record["severityNumber"], SEVERITY_NUMBER[record["severityText"]])
                self.assertGreater(int(record["timeUnixNano"]), 0)
                self.assertEqual(attributes["log.source"], "file")
                self.assertTrue(attributes["event.class"])
                self.assertIn("event.summary", attributes)
                if attributes["log.file.path"] == self.job_log:
                    self.assertIn(record["body"]["stringValue"], allowed, "a body that is not a corpus line")
                    self.assertIn(attributes["event.class"], allowed[record["body"]["stringValue"]])
                    self.assertIn(attributes.get("hpc_job"),
                                  event_corpus.jobs_named(record["body"]["stringValue"], "4242"))
                    from_job_log.append((attributes, record))
                else:
                    self.assertEqual(attributes["log.file.path"], self.kernel_log)
        self.assertEqual(len(from_job_log), len(records) - 2)
        self.assertEqual({a["event.class"] for a, _ in from_job_log}, event_corpus.ALL_CLASSES)
        bodies = [r["body"]["stringValue"] for _, r in from_job_log]
        self.assertEqual(len(bodies), len(set(bodies)), "an event received twice")
        self.assertEqual([position[b] for b in bodies], sorted(position[b] for b in bodies), "out of file order")
        self.assertTrue(all(a.get("hpc_job") == "4242" for a, _ in from_job_log
                            if a["event.class"] in {"cuda", "cuda_oom", "nccl_watchdog"}))

        # The simulator's kernel-log XIDs: the GPU and its UUID as attribution attributes, the XID under
        # the gpuscope.* namespace.
        kernel = {}
        for _, _, record in records:
            attributes = peers.attributes(record["attributes"])
            if attributes["log.file.path"] == self.kernel_log:
                kernel[attributes["gpuscope.xid"]] = attributes
        self.assertEqual(set(kernel), {"13", "31"})
        self.assertEqual((kernel["13"]["gpu"], kernel["31"]["gpu"]), ("2", "5"))
        for attributes in kernel.values():
            self.assertEqual(attributes["event.class"], "xid")
            self.assertRegex(attributes["UUID"], r"^GPU-[0-9a-f-]+$")

    def test_events_produced_while_otelcol_is_down_arrive_once_after_restart(self):
        events = 2500  # more than one batch (1000 records)
        self.agent = harness.Agent(
            AGENT, SIM, os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml"),
            env={"GPUSCOPE_SIM_KERNEL_LOG": ""},
            extra_args=["--no-collector.host", "--no-collector.infiniband",
                        "--events.state-dir", os.path.join(self.workdir, "state"), "--events.poll-interval", "100ms",
                        "--events.file", self.job_log, "--sink.otlp.url", self.collector.url + "/v1/logs"])

        def numbers():
            return [int(m.group(1)) for m in (SEQ.search(r["body"]["stringValue"])
                                              for _, _, r in self.collector.log_records()) if m]

        append(self.job_log, numbered_line(0) + "\n")
        harness.wait_for(lambda: numbers() == [0], 30, "the first event in the Collector's file")
        self.collector.stop()
        append(self.job_log, "".join(numbered_line(i) + "\n" for i in range(1, events)))
        harness.wait_for(lambda: metric(self.agent, "gpuscope_queue_records", queue="events", consumer="otlp")
                         == events - 1, 60, "the events queued while the Collector is down")
        harness.wait_for(lambda: (metric(self.agent, "gpuscope_sink_failed_requests_total", sink="otlp") or 0) >= 2,
                         30, "the OTLP sink retrying against a stopped Collector")
        self.collector.start()
        harness.wait_for(lambda: metric(self.agent, "gpuscope_queue_records", queue="events", consumer="otlp") == 0
                         and len(numbers()) >= events, 120, f"all {events} events in the Collector's file")
        # Every event exactly once, in file order (one queue, one consumer, one stream of requests).
        self.assertEqual(numbers(), list(range(events)))
        self.assertEqual({peers.attributes(r["attributes"])["event.class"] for _, _, r in self.collector.log_records()},
                         {"nccl", "cuda"})


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[5:])

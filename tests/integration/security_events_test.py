"""Integration: Falco's and Tetragon's JSON events (the recorded fixtures in tests/fixtures/security, in each
tool's documented shape) tailed by the real agent (--events.falco-file, --events.tetragon-file) and shipped by
its Loki sink into a real VictoriaLogs (built from the pinned module by scripts/build-peers.sh), read back
with LogsQL. Proves: every event that parses is stored once, with class falco/tetragon, source falco/tetragon
and the severity of its priority (or kind and action) as stream labels, rule/pid/process/pod as fields, the
job of its pid (a fixture /proc whose cgroup names Slurm job 4101) as hpc_job, and the original JSON line as
the message; the hostile lines are counted as read errors and nothing else is lost; the agent's
gpuscope_security_events_total counts them by rule and priority.

Usage: security_events_test.py AGENT SIM_LIBRARY VICTORIA_LOGS REPO_ROOT"""

import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
from harness import append, metric  # noqa: E402
import peers  # noqa: E402

AGENT, SIM, VICTORIA_LOGS, ROOT = sys.argv[1:5]
SCENARIO = os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "security")


def stream_labels(entry):
    """The stream labels of an entry, from its _stream: fields of the same names (user) may be metadata."""
    return dict(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', entry["_stream"]))


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


class SecurityEventsIntoVictoriaLogs(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-security-test-")
        # A procfs in which pid 4242 (the first Falco and Tetragon events' process) sits in job 4101's cgroup.
        proc = os.path.join(self.workdir, "proc", "4242")
        os.makedirs(proc)
        with open(os.path.join(proc, "cgroup"), "w") as f:
            f.write("0::/system.slice/slurmstepd.scope/job_4101/step_0/user/task_0\n")
        self.falco = os.path.join(self.workdir, "falco", "events.json")
        self.tetragon = os.path.join(self.workdir, "tetragon", "tetragon.log")
        os.makedirs(os.path.dirname(self.falco))
        os.makedirs(os.path.dirname(self.tetragon))
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

    def test_falco_and_tetragon_events_reach_victorialogs_and_the_counters(self):
        self.agent = harness.Agent(
            AGENT, SIM, SCENARIO, env={"GPUSCOPE_SIM_KERNEL_LOG": ""},
            extra_args=["--no-collector.host", "--no-collector.infiniband",
                        "--path.procfs", os.path.join(self.workdir, "proc"),
                        "--events.state-dir", os.path.join(self.workdir, "state"),
                        "--events.poll-interval", "100ms", "--events.ship-severity", "debug",
                        "--events.falco-file", os.path.join(self.workdir, "falco", "*.json"),
                        "--events.tetragon-file", self.tetragon,
                        "--sink.loki.url", self.receiver.loki_push_url(), "--sink.loki.format", "protobuf"])
        append(self.falco, fixture("falco.jsonl") + fixture("falco-hostile.jsonl"))
        append(self.tetragon, fixture("tetragon.jsonl") + fixture("tetragon-hostile.jsonl"))
        expected = 7 + 1 + 7 + 1  # the valid lines of the four files

        def stored():
            if metric(self.agent, "gpuscope_queue_records", queue="events", consumer="loki") != 0:
                return None
            if (metric(self.agent, "gpuscope_events_shipped_total") or 0) < expected:
                return None
            entries = self.receiver.query("*")
            return entries if len(entries) >= expected else None

        entries = harness.wait_for(stored, 90, "every Falco and Tetragon event stored in VictoriaLogs")
        self.assertEqual(len(entries), expected, "each event stored once")

        falco = [e for e in entries if stream_labels(e)["class"] == "falco"]
        tetragon = [e for e in entries if stream_labels(e)["class"] == "tetragon"]
        self.assertEqual((len(falco), len(tetragon)), (8, 8))
        valid_lines = {line for name in ("falco.jsonl", "tetragon.jsonl", "falco-hostile.jsonl",
                                         "tetragon-hostile.jsonl")
                       for line in fixture(name).decode("utf-8", "replace").splitlines()}
        for entry in entries:
            self.assertIn(entry["_msg"], valid_lines, "the message is the tool's own JSON line")
            self.assertEqual(stream_labels(entry)["source"], stream_labels(entry)["class"])

        by_rule = {e["rule"]: e for e in falco}
        shadow = by_rule["Read sensitive file untrusted"]
        self.assertEqual((stream_labels(shadow)["severity"], shadow["priority"], shadow["pid"], shadow["process"]),
                         ("warning", "warning", "4242", "cat"))
        self.assertEqual(shadow["hpc_job"], "4101", "the job of the pid's cgroup")
        self.assertEqual(stream_labels(by_rule["Drift Detected (chmod)"])["severity"], "critical")
        self.assertEqual(by_rule["Terminal shell in container"]["pod"], "trainer-0")
        self.assertEqual(by_rule["Terminal shell in container"].get("hpc_job", ""), "", "pid 5151 is gone")
        self.assertEqual(stream_labels(by_rule["Directory traversal monitored file read"])["severity"], "debug")

        by_rule = {e["rule"]: e for e in tetragon}
        self.assertEqual(stream_labels(by_rule["block-mining-pools"])["severity"], "critical")
        self.assertEqual(stream_labels(by_rule["file-monitoring"])["severity"], "warning")
        self.assertEqual(by_rule["file-monitoring"]["namespace"], "research")
        self.assertEqual(by_rule["process_exec"]["hpc_job"], "4101")

        # The counters: every event by rule and priority, the hostile lines as read errors.
        self.assertEqual(metric(self.agent, "gpuscope_security_events_total", source="falco",
                                rule="Read sensitive file untrusted", priority="warning"), 1)
        self.assertEqual(metric(self.agent, "gpuscope_security_events_total", source="tetragon",
                                rule="block-mining-pools", priority="critical"), 1)
        self.assertEqual(metric(self.agent, "gpuscope_events_total", source="falco", **{"class": "falco"},
                                severity="critical"), 3)
        self.assertEqual(metric(self.agent, "gpuscope_event_source_errors_total", source="falco"), 8)
        self.assertEqual(metric(self.agent, "gpuscope_event_source_errors_total", source="tetragon"), 5)
        self.assertIn("security event not parsed", self.agent.read_log())


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[5:])

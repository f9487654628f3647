"""Integration: Falco's and Tetragon's JSON events (the recorded fixtures in tests/fixtures/security, in each
tool's documented shape) tailed by the real agent (--events.falco-file, --events.tetragon-file) and shipped by
its Loki sink into a real VictoriaLogs (built from the pinned module by scripts/build-peers.sh), read back
with LogsQL. Proves: every event that parses is stored once, with class falco/tetragon, source falco/tetragon
and the severity of its priority (or kind and action) as stream labels, rule/pid/process/pod as fields, the
job of its pid (a fixture /proc whose cgroup names Slurm job 4101) as hpc_job, and the original JSON line as
the message; the hostile lines are counted as read errors and nothing else is lost; the agent's
gpuscope_security_events_total counts them by rule and priority. Falco's http_output
(--events.falco-http): the same events POSTed to /api/v1/falco one a request and all in one body are
stored and counted alike, a body that does not parse gets 400 and nothing of it is kept, the path is 404
without the flag, and basic auth from --web.config.file guards it like /metrics.

Usage: security_events_test.py AGENT SIM_LIBRARY VICTORIA_LOGS REPO_ROOT"""

import json
import os
import re
import shutil
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

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


def post(url, body, headers=None):
    """POSTs `body` as Falco's http_output does (Content-Type: application/json); (status, response body)."""
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


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
        # The message is the human line (Falco's output text, Tetragon's summary), never the JSON, whose
        # fields travel as structured metadata.
        outputs = set()
        for name in ("falco.jsonl", "falco-hostile.jsonl"):
            for line in fixture(name).decode("utf-8", "replace").splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and isinstance(event.get("output"), str):
                    outputs.add(event["output"] or event.get("rule"))
        for entry in entries:
            self.assertTrue(entry["_msg"] and not entry["_msg"].startswith("{"), entry["_msg"])
            self.assertEqual(stream_labels(entry)["source"], stream_labels(entry)["class"])
        for entry in falco:
            self.assertIn(entry["_msg"], outputs, "a Falco event's message is its output text")

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
        execs = {e["pid"]: e for e in tetragon if e["rule"] == "process_exec"}
        self.assertEqual(execs["4242"]["hpc_job"], "4101", "the job of the pid's cgroup")

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

    def test_falco_http_output_posts_reach_victorialogs_and_the_counters(self):
        self.agent = harness.Agent(
            AGENT, SIM, SCENARIO, env={"GPUSCOPE_SIM_KERNEL_LOG": ""},
            extra_args=["--no-collector.host", "--no-collector.infiniband",
                        "--path.procfs", os.path.join(self.workdir, "proc"),
                        "--events.state-dir", os.path.join(self.workdir, "state"),
                        "--events.poll-interval", "100ms", "--events.ship-severity", "debug",
                        "--events.falco-http",
                        "--sink.loki.url", self.receiver.loki_push_url(), "--sink.loki.format", "protobuf"])
        url = self.agent.url + "/api/v1/falco"
        lines = fixture("falco.jsonl").splitlines()
        for line in lines:  # what Falco's http_output sends: one event per request, no newline
            self.assertEqual(post(url, line), (200, "ok\n"))
        self.assertEqual(post(url, fixture("falco.jsonl")), (200, "ok\n"), "several events in one body")
        status, reason = post(url, lines[0] + b"\n" + b"{not json\n")
        self.assertEqual(status, 400)
        self.assertTrue(reason.startswith("line 2: ") and reason.count("\n") == 1, reason)
        with self.assertRaises(urllib.error.HTTPError) as get:
            harness.http_get(url)
        self.assertEqual(get.exception.code, 405)
        expected = 2 * len(lines)

        def stored():
            if metric(self.agent, "gpuscope_queue_records", queue="events", consumer="loki") != 0:
                return None
            if (metric(self.agent, "gpuscope_events_shipped_total") or 0) < expected:
                return None
            entries = self.receiver.query("*")
            return entries if len(entries) >= expected else None

        entries = harness.wait_for(stored, 90, "every POSTed Falco event stored in VictoriaLogs")
        self.assertEqual(len(entries), expected, "each event stored once, none of the refused body")
        self.assertEqual(sorted(e["rule"] for e in entries), sorted(json.loads(line)["rule"] for line in lines * 2),
                         "every event twice (one a request, then all in one body), none of the refused body")
        shadow = [e for e in entries if e["rule"] == "Read sensitive file untrusted"]
        self.assertEqual(len(shadow), 2)
        for entry in shadow:
            self.assertEqual((stream_labels(entry)["class"], stream_labels(entry)["source"],
                              stream_labels(entry)["severity"]), ("falco", "falco", "warning"))
            self.assertEqual(entry["hpc_job"], "4101", "the job of the pid's cgroup")

        self.assertEqual(metric(self.agent, "gpuscope_events_total", source="falco"), expected)
        self.assertEqual(metric(self.agent, "gpuscope_security_events_total", source="falco"), expected)
        self.assertEqual(metric(self.agent, "gpuscope_security_events_total", source="falco",
                                rule="Read sensitive file untrusted", priority="warning"), 2)
        self.assertEqual(metric(self.agent, "gpuscope_event_posted_dropped_total", source="falco"), 0)
        self.assertEqual(metric(self.agent, "gpuscope_http_requests_total", path="/api/v1/falco", code="200"),
                         len(lines) + 1)
        self.assertEqual(metric(self.agent, "gpuscope_http_requests_total", path="/api/v1/falco", code="400"), 1)

    def test_falco_http_path_is_404_without_the_flag(self):
        self.agent = harness.Agent(
            AGENT, SIM, SCENARIO, env={"GPUSCOPE_SIM_KERNEL_LOG": ""},
            extra_args=["--no-collector.host", "--no-collector.infiniband",
                        "--events.state-dir", os.path.join(self.workdir, "state"),
                        "--events.falco-file", self.falco])
        status, _ = post(self.agent.url + "/api/v1/falco", fixture("falco.jsonl").splitlines()[0])
        self.assertEqual(status, 404)

    def test_falco_http_output_needs_the_web_configs_basic_auth(self):
        web_config = os.path.join(self.workdir, "web.yml")
        with open(web_config, "w") as f:
            # `htpasswd -nbBC 10 prometheus s3cr3t-pass`
            f.write("basic_auth_users:\n  prometheus: $2y$10$X7FQ0x0F4J5MWEwbpu/1c.QXY.hxcvGMYDONA0jzRUoQJYMUmJkxy\n")
        self.agent = harness.Agent(
            AGENT, SIM, SCENARIO, env={"GPUSCOPE_SIM_KERNEL_LOG": ""},
            extra_args=["--no-collector.host", "--no-collector.infiniband",
                        "--events.state-dir", os.path.join(self.workdir, "state"),
                        "--events.falco-http", "--web.config.file", web_config])
        url = self.agent.url + "/api/v1/falco"
        event = fixture("falco.jsonl").splitlines()[0]
        self.assertEqual(post(url, event)[0], 401)
        credentials = {"Authorization": "Basic cHJvbWV0aGV1czpzM2NyM3QtcGFzcw=="}  # prometheus:s3cr3t-pass
        self.assertEqual(post(url, event, credentials), (200, "ok\n"))


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[5:])

"""Integration: the README's two ways to run the agent locally, as a user runs them, on the built tree.
scripts/demo.sh (what scripts/run.sh starts) and scripts/single.sh (scripts/run.sh --single) are started
in a process group of their own, as a terminal starts a command, and stopped with SIGINT sent to that
group, as Ctrl-C does. Proves that Ctrl-C, also pressed twice, leaves none of their processes running
and none of their temporary files behind (each runs with its own TMPDIR, which must end up empty), that
the demo's larger fleet (--fleet, gpuscope-fleet) is scraped as the agents' job and stops with it, and
that the single node's default scenario gets XID lines through the event path into gpuscope_events_total
and gpuscope_xid_errors_total.

Usage: demo_scripts_test.py BUILD_DIR"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.path.abspath(sys.argv[1])
# The demo prints this line once its whole stack (agents, Prometheus, Alertmanager, webhooks) runs.
DEMO_STARTED = "gpuscope demo: a simulated GPU fleet on loopback"


def prom_query(url, promql):
    """An instant query's result list on the Prometheus at `url`."""
    body = json.loads(harness.http_get(url + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}))[2])
    return body["data"]["result"] if body.get("status") == "success" else []


class Script:
    """A script started as a terminal starts a command: its own process group, output collected."""

    def __init__(self, argv, env):
        self.tmpdir = tempfile.mkdtemp(prefix="gpuscope-script-test-")
        self.output = []
        self._lines = threading.Condition()
        self.process = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env, "TMPDIR": self.tmpdir},
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            with self._lines:
                self.output.append(line)
                self._lines.notify_all()

    def wait_for_line(self, text, timeout):
        with self._lines:
            if not self._lines.wait_for(lambda: any(text in line for line in self.output)
                                        or self.process.poll() is not None, timeout):
                raise AssertionError(f"no line {text!r} within {timeout}s:\n{''.join(self.output)}")
        if self.process.poll() is not None and not any(text in line for line in self.output):
            raise AssertionError(f"exited with {self.process.returncode} before {text!r}:\n{''.join(self.output)}")

    def ctrl_c(self):
        os.killpg(self.process.pid, signal.SIGINT)

    def wait(self, timeout):
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"still running {timeout}s after Ctrl-C:\n{''.join(self.output)}")

    def left_behind(self):
        """Every path left under the script's TMPDIR."""
        return sorted(os.path.relpath(os.path.join(d, n), self.tmpdir)
                      for d, dirs, files in os.walk(self.tmpdir) for n in dirs + files)

    def stragglers(self):
        """Pids of processes still running with the script's TMPDIR (or a folder under it) in their
        environment: the script and everything it started (the demo's stack runs in a session of its own)."""
        marker = f"TMPDIR={self.tmpdir}".encode()
        pids = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if any(v.startswith(marker) for v in f.read().split(b"\0")):
                        pids.append(int(entry))
            except (OSError, ValueError):
                continue
        return pids

    def kill(self):
        for pid in [self.process.pid] + self.stragglers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()

    def cleanup(self):
        if self.process.poll() is None:
            self.kill()
        self.process.stdout.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


class DemoStopsCleanly(unittest.TestCase):
    def start_demo(self, *extra):
        demo = Script([os.path.join(ROOT, "scripts", "demo.sh"), "--build", BUILD, *extra], {})
        self.addCleanup(demo.cleanup)
        demo.wait_for_line(DEMO_STARTED, 120)
        self.assertTrue(demo.left_behind(), "the demo keeps its files under TMPDIR while it runs")
        # demo.sh, fleet.py, 7 agents, Prometheus, Alertmanager at least.
        self.assertGreaterEqual(len(demo.stragglers()), 11, "the stack's processes are recognised")
        return demo

    def test_ctrl_c_stops_the_demo_and_its_larger_fleet_and_removes_its_temporary_files(self):
        # --fleet: the nodes of gpuscope-fleet are scraped as the agents' job, with their jobs, and stop too.
        demo = self.start_demo("--fleet", "5")
        demo.wait_for_line("fleet-node-0001 .. 0005", 10)
        prometheus = next(re.search(r"(http://127\.0\.0\.1:\d+)", line).group(1) for line in demo.output
                          if line.strip().startswith("Prometheus"))

        def fleet_up():
            result = prom_query(prometheus, 'up{job="gpuscope", node=~"fleet-node-.*"} == 1')
            return sorted(r["metric"]["node"] for r in result) == [f"fleet-node-{i:04d}" for i in range(1, 6)]
        harness.wait_for(fleet_up, 90, "the five fleet nodes scraped as job=\"gpuscope\"")
        jobs = prom_query(prometheus, 'count(count by (hpc_job) (DCGM_FI_DEV_GPU_TEMP{Hostname=~"fleet-node-.*"}))')
        self.assertTrue(jobs and float(jobs[0]["value"][1]) >= 1, "the fleet's nodes carry their jobs")
        demo.ctrl_c()
        self.assertEqual((demo.wait(60), demo.left_behind(), demo.stragglers()), (130, [], []))

    def test_a_second_ctrl_c_while_stopping_still_removes_the_temporary_files(self):
        demo = self.start_demo()
        demo.ctrl_c()
        demo.wait_for_line("Stopping the fleet", 30)
        demo.ctrl_c()
        self.assertEqual((demo.wait(60), demo.left_behind(), demo.stragglers()), (130, [], []))


class SingleNode(unittest.TestCase):
    def test_default_scenario_counts_xid_events_and_ctrl_c_removes_its_state(self):
        port = harness.free_port()
        # 10x: the default scenario's first XIDs (13 at 30 s, 31 at 45 s, simulated) within seconds.
        single = Script([os.path.join(ROOT, "scripts", "single.sh"), "--build", BUILD],
                        {"GPUSCOPE_LISTEN": f"127.0.0.1:{port}", "GPUSCOPE_SIM_SPEED": "10"})
        self.addCleanup(single.cleanup)
        url = f"http://127.0.0.1:{port}/metrics"

        def xid_series():
            samples = harness.parse_exposition(harness.http_get(url)[2].decode())
            events = sum(v for (name, labels), v in samples.items()
                         if name == "gpuscope_events_total" and dict(labels).get("class") == "xid")
            xid13 = sum(v for (name, labels), v in samples.items()
                        if name == "gpuscope_xid_errors_total" and dict(labels).get("xid") == "13")
            return (events, xid13) if events >= 1 and xid13 >= 1 else None

        harness.wait_for(xid_series, 30, "XID 13 from the kernel log in gpuscope_events_total and "
                                         "gpuscope_xid_errors_total")
        self.assertTrue(single.left_behind(), "the kernel log and event state live under TMPDIR")
        single.ctrl_c()
        self.assertEqual((single.wait(30), single.left_behind(), single.stragglers()), (130, [], []))


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

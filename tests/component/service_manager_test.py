"""Component: the agent and a service manager, without systemd. A unix datagram socket stands where
systemd's notification socket would ($NOTIFY_SOCKET): the agent sends READY=1 (with its STATUS) only once
/metrics answers, and STOPPING=1 when SIGTERM reaches it, then exits 0. With --log.format=auto (the default)
and no journal on stderr, the log is logfmt lines; JOURNAL_STREAM inherited from a parent but naming
another stream than stderr does not switch it to the journal. (Type=notify under the real systemd and the
journal's fields: integration_package_debian12.)

Usage: service_manager_test.py AGENT SIM_LIBRARY SCENARIO_DIR"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
import unittest_main  # noqa: E402

AGENT, SIM, SCENARIOS = sys.argv[1:4]


class NotifyAndLogFormat(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-notify-")
        self.socket_path = os.path.join(self.dir, "notify")
        self.manager = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.manager.bind(self.socket_path)
        self.manager.settimeout(30)
        self.addCleanup(self.manager.close)
        self.port = harness.free_port()
        self.stderr_path = os.path.join(self.dir, "agent.log")

    def start(self, extra_env=None):
        env = dict(os.environ, GPUSCOPE_SIM_SCENARIO=os.path.join(SCENARIOS, "h100-training.yaml"),
                   NOTIFY_SOCKET=self.socket_path, **(extra_env or {}))
        if "JOURNAL_STREAM" not in (extra_env or {}):
            env.pop("JOURNAL_STREAM", None)
        self.stderr = open(self.stderr_path, "w")
        self.agent = subprocess.Popen(
            [AGENT, "--nvml.library", SIM, "--web.listen-address", f"127.0.0.1:{self.port}",
             "--events.state-dir", os.path.join(self.dir, "state")],
            stdout=subprocess.DEVNULL, stderr=self.stderr, env=env)
        self.addCleanup(harness.terminate, self.agent)

    def test_ready_once_metrics_answer_and_stopping_on_sigterm(self):
        self.start()
        ready = self.manager.recv(4096).decode()
        # The moment READY=1 arrives, /metrics already answers (no retry here).
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            self.assertEqual(response.status, 200)
            self.assertIn(b"DCGM_FI_DEV_GPU_UTIL", response.read())
        self.assertEqual(ready, f"READY=1\nSTATUS=serving /metrics on 127.0.0.1:{self.port}")
        self.agent.send_signal(signal.SIGTERM)
        self.assertEqual(self.manager.recv(4096).decode(), "STOPPING=1\nSTATUS=shutting down")
        self.assertEqual(self.agent.wait(timeout=30), 0)
        self.stderr.close()
        with open(self.stderr_path) as f:
            log = f.read()
        # --log.format=auto without the journal on stderr: logfmt lines.
        self.assertRegex(log, r'(?m)^ts=\S+ level=info msg="gpuscope-agent listening" ')

    def test_journal_stream_of_another_file_keeps_logfmt(self):
        # systemd passes JOURNAL_STREAM down to children; a child whose stderr goes elsewhere must not log
        # to the journal. Here JOURNAL_STREAM names this test's own stdout, not the agent's stderr file.
        st = os.fstat(sys.stdout.fileno())
        self.start({"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
        self.manager.recv(4096)
        self.agent.send_signal(signal.SIGTERM)
        self.assertEqual(self.agent.wait(timeout=30), 0)
        self.stderr.close()
        with open(self.stderr_path) as f:
            self.assertRegex(f.read(), r'(?m)^ts=\S+ level=info msg="gpuscope-agent listening" ')


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

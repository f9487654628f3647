"""Integration: `gpuscope top`'s real interactive screen, driven in tmux (send-keys, capture-pane), against a real
Prometheus scraping three simulated nodes' agents with the fast mixin's alert rules (fleet.py):
gpu-node-01 (h100-training.yaml, job 4101 of alice: busy), gpu-node-03 (h100-faults.yaml, job 4103 of carol: a
double-bit ECC error on GPU 5 fires GpuEccDoubleBitError) and gpu-node-04 (h100-allocated-idle.yaml, job 4104 of
dave: 8 GPUs allocated and idle). The first screen must list the nodes with their jobs, mark 4104's GPUs idle
('i') and node 03's alert ('!'); keys switch the metric (the header changes), sort, filter by user (the rows
narrow), change the refresh interval and show the help; resizing the window to 80x24 and back to 200x60 re-lays
out the screen; q exits 0. A terminal without colours (TERM=vt100) gets the same digits and markers and no colour
escapes; an unreachable Prometheus shows the error instead of exiting, and one that never answers freezes
no key. `--once` prints the same rows.

Usage: cli_top_test.py AGENT SIM_LIBRARY GPUSCOPE"""

import http.server
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402

AGENT, SIM, GPUSCOPE = sys.argv[1:4]
HOSTS = ("gpu-node-01", "gpu-node-03", "gpu-node-04")
NODES = tuple(n for n in fleet.DEMO_NODES if n.hostname in HOSTS)
COLOUR_ESCAPE = re.compile(r"\x1b\[[0-9;]*(?:3|4)[0-7]m")


class TmuxScreen:
    """One detached tmux session (its own server socket, no user configuration) running a command in a pane
    of the given size; the command's exit status lands in a file."""

    def __init__(self, workdir, name, command, width, height, env=""):
        self.socket = os.path.join(workdir, f"tmux-{name}.sock")
        self.rc_file = os.path.join(workdir, f"{name}.rc")
        shell = f"{env} {command}; echo $? > {shlex.quote(self.rc_file)}"
        self.tmux("new-session", "-d", "-s", name, "-x", str(width), "-y", str(height), shell)
        self.name = name

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.socket, "-f", "/dev/null", *args], check=True,
                              capture_output=True, text=True, timeout=20).stdout

    def keys(self, *keys, literal=False):
        self.tmux("send-keys", "-t", self.name, *(["-l"] if literal else []), *keys)

    def screen(self, escapes=False):
        return self.tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", self.name)

    def wait(self, predicate, what, timeout=30):
        """The screen once predicate(screen) holds; fails with the last screen otherwise."""
        last = [""]

        def check():
            last[0] = self.screen()
            return predicate(last[0])

        try:
            harness.wait_for(check, timeout, what)
        except Exception as e:
            raise AssertionError(f"{e}\nlast screen:\n{last[0]}") from None
        return last[0]

    def resize(self, width, height):
        self.tmux("resize-window", "-t", self.name, "-x", str(width), "-y", str(height))

    def exit_status(self):
        def written():
            if not os.path.exists(self.rc_file):
                return None
            with open(self.rc_file) as f:
                return f.read().strip()

        return harness.wait_for(written, 15, "the command to exit")

    def kill(self):
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=20)


def row(screen, host):
    """The screen's row of `host` (its line starting with the name), or None."""
    for line in screen.splitlines():
        if line.startswith(host):
            return line
    return None


def cells(screen, host):
    """The GPU cells of `host`'s row: (value or level digit, marker) for each cell between the node's name (and
    model) and the column where the header's JOB column starts; [] when the row or the header is not there."""
    line = row(screen, host)
    header = next((h for h in screen.splitlines() if h.startswith("NODE")), None)
    if line is None or header is None or "JOB" not in header:
        return []
    region = line[:header.index("JOB")]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"(?<=\s)(\d+|-)([i!]?)(?=\s)", region + " ")]


class GpuscopeTop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="gpuscope-top-")
        mixin = fleet.generate_mixin(os.path.join(cls.workdir, "mixin"), fleet.FAST_OVERRIDES)
        cls.fleet = fleet.Fleet(AGENT, SIM, NODES, rule_files=[os.path.join(mixin, f) for f in fleet.RULE_FILES])
        try:
            cls.prometheus = cls.fleet.prometheus

            def ready():
                idle = cls.prometheus.query('count(gpuscope_gpu_allocated_idle{hpc_job="4104"} == 1)')
                alert = cls.prometheus.query('ALERTS{alertstate="firing", alertname="GpuEccDoubleBitError", '
                                             'Hostname="gpu-node-03", gpu="5"}')
                jobs = cls.prometheus.query("count(gpuscope_job_info)")
                return (idle and float(idle[0]["value"][1]) == 8 and alert and jobs
                        and float(jobs[0]["value"][1]) == 3)

            harness.wait_for(ready, 240, "4104's GPUs idle, node 03's ECC alert firing and the three jobs")
        except BaseException:
            cls.fleet.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.fleet.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def start(self, name, width, height, *flags, env="", url=None):
        url = url or self.prometheus.url
        command = " ".join(shlex.quote(a) for a in (GPUSCOPE, "top", f"--prometheus.url={url}", *flags))
        screen = TmuxScreen(self.workdir, name, command, width, height, env=env)
        self.addCleanup(screen.kill)
        return screen

    def test_interactive_screen_keys_filter_resize_and_quit(self):
        top = self.start("main", 200, 60, "--refresh=1")
        first = top.wait(lambda s: all(row(s, h) and cells(s, h) for h in HOSTS) and "GpuEccDoubleBitError" in s,
                         "the three nodes with their cells and node 03's alert")
        print("first screen, 200x60:\n" + first)  # for the log: what a person sees
        self.assertIn("4101 alice llm/train llama-finetune", row(first, "gpu-node-01"))
        self.assertIn("4103 carol vision/train vit-huge", row(first, "gpu-node-03"))
        self.assertIn("4104 dave research/interactive notebook", row(first, "gpu-node-04"))
        self.assertIn("H100", row(first, "gpu-node-01"))
        self.assertTrue(first.splitlines()[0].startswith("gpuscope top | util % | 3 nodes"), first.splitlines()[0])
        self.assertIn("NODE", first.splitlines()[2])
        self.assertIn("MODEL", first.splitlines()[2])
        # The allocated-idle job's eight GPUs are marked; the busy node's are not.
        self.assertEqual([m for _, m in cells(first, "gpu-node-04")], ["i"] * 8)
        self.assertNotIn("i", [m for _, m in cells(first, "gpu-node-01")])
        # Node 03: '!' after its name, on GPU 5's cell, and the alert's name at the end of its row.
        node03 = row(first, "gpu-node-03")
        self.assertTrue(node03.startswith("gpu-node-03!"), node03)
        self.assertEqual(dict(enumerate(m for _, m in cells(first, "gpu-node-03"))).get(5), "!", node03)
        self.assertNotIn("!", row(first, "gpu-node-01"))

        # Metric keys: the header names the metric, then the cells follow (power and memory of an idle GPU differ
        # from its utilisation, so wait for the header only).
        for key, header in (("m", "| memory % |"), ("t", "| temperature C |"), ("p", "| power % |"),
                            ("u", "| util % |")):
            top.keys(key)
            top.wait(lambda s, h=header: h in s.splitlines()[0] and "loading" not in s.splitlines()[0],
                     f"the header to say {header}")

        # Sort: node name, value, idle first.
        top.keys("s")
        top.wait(lambda s: "sort value" in s, "sort by value")
        top.keys("s")
        screen = top.wait(lambda s: "sort idle" in s, "sort idle first")
        self.assertTrue(screen.splitlines()[3].startswith("gpu-node-04"), screen)
        top.keys("s")
        top.wait(lambda s: "sort node" in s, "sort by node")

        # Filter by user: the rows narrow to dave's node; c clears it.
        top.keys("/")
        top.wait(lambda s: "filter (user=" in s, "the filter prompt")
        top.keys("user=dave", literal=True)
        top.keys("Enter")
        screen = top.wait(lambda s: "filter user=dave" in s, "the filter to apply")
        self.assertIsNotNone(row(screen, "gpu-node-04"), screen)
        self.assertIsNone(row(screen, "gpu-node-01"), screen)
        self.assertIsNone(row(screen, "gpu-node-03"), screen)
        self.assertIn("nodes 1-1 of 1", screen)
        top.keys("/")  # the prompt starts with the filter in force: "user=dave"
        top.keys("BSpace")
        top.keys("x", literal=True)  # "user=davx": nobody
        top.keys("Enter")
        screen = top.wait(lambda s: "filter user=davx" in s, "the new filter")
        self.assertIn("nodes 0 of 0", screen)
        top.keys("/")
        top.keys("C-u")  # clears the line
        top.keys("gpu=1", literal=True)
        top.keys("Enter")
        screen = top.wait(lambda s: "keys are user, account and partition" in s, "the bad filter's error")
        self.assertIn("filter user=davx", screen)  # the last good filter stays
        top.keys("c")
        top.wait(lambda s: all(row(s, h) for h in HOSTS) and "filter none" in s, "the filter cleared")

        # Refresh interval.
        top.keys("+")
        top.wait(lambda s: "every 2s" in s.splitlines()[0], "the interval to grow to 2 s")
        top.keys("-")
        top.wait(lambda s: "every 1s" in s.splitlines()[0], "the interval back to 1 s")

        # Help, closed by any key.
        top.keys("?")
        screen = top.wait(lambda s: "Keys" in s and row(s, "gpu-node-01") is None, "the help")
        self.assertIn("allocated to a job and idle", screen)
        top.keys("x", literal=True)
        top.wait(lambda s: row(s, "gpu-node-01") is not None, "the rows after the help")

        # 80x24: compact (a level digit per GPU, no model column), every line within 80 columns.
        top.resize(80, 24)
        compact = top.wait(lambda s: "MODEL" not in s and row(s, "gpu-node-04") is not None and
                           len(s.splitlines()) <= 24, "the compact layout")
        print("80x24:\n" + compact)
        self.assertTrue(all(len(line) <= 80 for line in compact.splitlines()), compact)
        self.assertEqual(len(compact.splitlines()), 24)
        self.assertTrue(compact.splitlines()[-1].startswith("u m p t metric"), compact)
        self.assertEqual([m for _, m in cells(compact, "gpu-node-04")], ["i"] * 8)
        self.assertTrue(all(len(d) == 1 for d, _ in cells(compact, "gpu-node-01")), compact)
        self.assertIn("4101 alice", row(compact, "gpu-node-01"))
        self.assertNotIn("llama-finetune", compact)
        # Back to wide: the model and the job names return.
        top.resize(200, 60)
        wide = top.wait(lambda s: "MODEL" in s and "llama-finetune" in s, "the wide layout again")
        self.assertIn("H100", row(wide, "gpu-node-03"))

        # The colours are there (this tmux terminal has them) on top of the same text.
        self.assertRegex(top.screen(escapes=True), COLOUR_ESCAPE)

        top.keys("q", literal=True)
        self.assertEqual(top.exit_status(), "0")

    def test_monochrome_terminal_gets_digits_and_markers_without_colours(self):
        top = self.start("mono", 100, 24, "--refresh=1", env="TERM=vt100")
        screen = top.wait(lambda s: all(row(s, h) and cells(s, h) for h in HOSTS), "the three nodes")
        self.assertEqual([m for _, m in cells(screen, "gpu-node-04")], ["i"] * 8)
        self.assertIn("!", row(screen, "gpu-node-03"))
        self.assertNotRegex(top.screen(escapes=True), COLOUR_ESCAPE)
        top.keys("q", literal=True)
        self.assertEqual(top.exit_status(), "0")

    def test_unreachable_prometheus_shows_the_error_and_keys_still_work(self):
        top = self.start("down", 120, 30, "--refresh=1", url=f"http://127.0.0.1:{harness.free_port()}")
        screen = top.wait(lambda s: "ERROR: query" in s, "the error on screen")
        self.assertIn("ERROR: query DCGM_FI_DEV_GPU_UTIL", screen)
        top.keys("m")
        top.wait(lambda s: "| memory %" in s.splitlines()[0], "the metric key with Prometheus down")
        top.keys("q", literal=True)
        self.assertEqual(top.exit_status(), "0")

    def test_slow_prometheus_never_freezes_the_keys(self):
        """A server that answers every query after 60 s: the metric key, the help and q still act at once (the
        queries run on their own thread), and q does not wait for the query in flight (exit_status waits 15 s)."""
        release = threading.Event()

        class Slow(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                release.wait(60)
                self.send_response(503)
                self.end_headers()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.addCleanup(release.set)
        top = self.start("slow", 120, 30, "--refresh=1", "--prometheus.timeout=120",
                         url=f"http://127.0.0.1:{server.server_address[1]}")
        top.wait(lambda s: "waiting for the first answer" in s, "the first screen before any answer")
        top.keys("t")
        top.wait(lambda s: "| temperature C" in s.splitlines()[0], "the metric key while a query hangs", timeout=10)
        top.keys("?")
        top.wait(lambda s: "Keys" in s, "the help while a query hangs", timeout=10)
        top.keys("x", literal=True)
        top.keys("q", literal=True)
        self.assertEqual(top.exit_status(), "0")

    def test_once_prints_one_frame_and_bad_flags_are_usage_errors(self):
        done = subprocess.run([GPUSCOPE, "top", "--once", "--width=200", f"--prometheus.url={self.prometheus.url}"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("4104 dave research/interactive notebook", row(done.stdout, "gpu-node-04"))
        self.assertEqual([m for _, m in cells(done.stdout, "gpu-node-04")], ["i"] * 8)
        filtered = subprocess.run([GPUSCOPE, "top", "--once", "--filter=user=alice", "--metric=memory",
                                   f"--prometheus.url={self.prometheus.url}"], capture_output=True, text=True,
                                  timeout=60)
        self.assertEqual(filtered.returncode, 0, filtered.stderr)
        self.assertEqual([h for h in HOSTS if row(filtered.stdout, h)], ["gpu-node-01"])
        self.assertTrue(filtered.stdout.startswith("gpuscope top | memory %"), filtered.stdout)
        # Every metric's query has a value for every GPU of the busy node (its cells are numbers, not '-').
        for metric, header in (("memory", "memory %"), ("power", "power %"), ("temperature", "temperature C")):
            frame = subprocess.run([GPUSCOPE, "top", "--once", "--width=200", f"--metric={metric}",
                                    f"--prometheus.url={self.prometheus.url}"], capture_output=True, text=True,
                                   timeout=60)
            self.assertEqual(frame.returncode, 0, frame.stderr)
            self.assertTrue(frame.stdout.startswith(f"gpuscope top | {header} |"), frame.stdout)
            values = [int(v) for v, _ in cells(frame.stdout, "gpu-node-01")]
            self.assertEqual(len(values), 8, frame.stdout)
            self.assertTrue(all(0 < v < 200 for v in values), frame.stdout)
        down = subprocess.run([GPUSCOPE, "top", "--once", f"--prometheus.url=http://127.0.0.1:{harness.free_port()}"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(down.returncode, 1)
        self.assertIn("query DCGM_FI_DEV_GPU_UTIL", down.stderr)
        for bad, message in (("--metric=fan", "--metric must be"), ("--refresh=0", "--refresh must be"),
                             ("--filter=gpu=1", "keys are user, account and partition"),
                             ("--sort=random", "--sort must be")):
            usage = subprocess.run([GPUSCOPE, "top", "--once", bad], capture_output=True, text=True, timeout=60)
            self.assertEqual(usage.returncode, 2, bad)
            self.assertIn(message, usage.stderr)
        # Not a terminal and no --once: a usage error, not a broken screen.
        piped = subprocess.run([GPUSCOPE, "top", f"--prometheus.url={self.prometheus.url}"], capture_output=True,
                               text=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(piped.returncode, 2)
        self.assertIn("needs a terminal", piped.stderr)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""Integration: how `gpuscope job` draws, against real Prometheus scraping a simulated node's agent
(gpu-node-01, h100-training.yaml, job 4101 on 8 GPUs), and the Slurm epilog that appends the report to a
real job's output.

- --plot FILE.png / FILE.svg: the PNG decoded here (zlib + the PNG filters, standard library): each
  panel's frame crossed by GPU lines in every column; the SVG parsed as XML: one series path per GPU and
  metric, each across the whole life, and the tick labels of both axes.
- On a terminal (a pseudo-terminal here) the "Over time" section: sparklines on a UTF-8 terminal, plain
  numbers with NO_COLOR whose means equal the test's own range queries, nothing on a pipe.
- A job of nearly three hours backfilled with promtool into a second Prometheus: the step keeps each
  series within 300 points (means over the step) and the means shown equal the samples'.
- deploy/slurm/job-summary-epilog.sh as a real slurmd's Epilog: Slurm is told to number jobs from 4101, so
  its first job is the one the simulated node reports, and the summary must land in that job's output,
  owned by the job's user; the next job (4102, no GPUs in Prometheus) gets nothing and still completes.

Usage: cli_job_plot_test.py AGENT SIM_LIBRARY GPUSCOPE"""

import calendar
import fcntl
import json
import math
import os
import pty
import pwd
import shutil
import re
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unittest
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402
import slurm_harness  # noqa: E402

AGENT, SIM, GPUSCOPE = sys.argv[1:4]
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NODES = tuple(n for n in fleet.DEMO_NODES if n.hostname == "gpu-node-01")
METRICS = ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP")
SERIES_STROKE = "stroke-width:1.5;"
TICK_FILL = "fill:rgb(25%,25%,25%);"


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw, stride, rows, prior = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = prior[i], prior[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prior = line
    return width, height, rows


def run_on_terminal(argv, env, columns=100):
    """(exit code, stdout text, stderr text) of argv with stdout on a pseudo-terminal `columns` wide."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen(argv, stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    code = process.wait(timeout=60)
    err = process.stderr.read().decode()
    process.stderr.close()
    return code, out.decode("utf-8").replace("\r\n", "\n"), err


class GpuscopeJobPlot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = fleet.Fleet(AGENT, SIM, NODES)
        cls.tmp = tempfile.mkdtemp(prefix="gpuscope-plot-")
        try:
            cls.prometheus = cls.fleet.prometheus
            harness.wait_for(
                lambda: (r := cls.prometheus.query('count_over_time(gpuscope_job_info{hpc_job="4101"}[10m])'))
                and float(r[0]["value"][1]) >= 20, 120, "20 samples of job 4101")
            cls.panels = [m for m in METRICS if cls.prometheus.query(f'{m}{{hpc_job="4101"}}')]
        except BaseException:
            cls.fleet.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.fleet.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def gpuscope(self, *args, env=None):
        return subprocess.run([GPUSCOPE, "job", *args, f"--prometheus.url={self.prometheus.url}", "--lookback=900"],
                              capture_output=True, text=True, timeout=60, env=env)

    def gpuscope_on_terminal(self, *args, env):
        """Output of gpuscope job with stdout on a 100-column pseudo-terminal."""
        code, out, err = run_on_terminal([GPUSCOPE, "job", *args, f"--prometheus.url={self.prometheus.url}",
                                          "--lookback=900"], env)
        self.assertEqual(code, 0, err)
        return out

    def query_range(self, expr, start, end, step):
        params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
        with urllib.request.urlopen(f"{self.prometheus.url}/api/v1/query_range?{params}", timeout=30) as answer:
            return json.load(answer)["data"]["result"]

    def test_svg_has_a_path_per_gpu_and_metric_across_the_life_and_tick_labels(self):
        path = os.path.join(self.tmp, "job.svg")
        done = self.gpuscope("4101", "--format=json", f"--plot={path}")
        self.assertEqual(done.returncode, 0, done.stderr)
        report = json.loads(done.stdout)  # --plot adds nothing to the JSON report
        self.assertNotIn("Over time", done.stdout)
        self.assertGreater(report["last_seen"] - report["first_seen"], 15)
        tree = ET.parse(path)
        svg = "{http://www.w3.org/2000/svg}"
        series = [p for p in tree.iter(svg + "path") if SERIES_STROKE in p.get("style", "")]
        self.assertEqual(len(self.panels), 4, self.panels)
        self.assertEqual(len(series), 8 * len(self.panels))
        # The life was scraped every second, without gaps: every line runs from the time axis' start to its
        # end (one subpath; cairo merges collinear segments, so points are not counted).
        spans = set()
        for p in series:
            d = p.get("d")
            self.assertEqual(d.count("M"), 1, d[:200])
            xs = [float(x) for x in re.findall(r"[ML] ([-0-9.]+) ", d)]
            spans.add((round(min(xs)), round(max(xs))))
        self.assertEqual(len(spans), 1, spans)
        left, right = spans.pop()
        self.assertGreater(right - left, 0.8 * float(tree.getroot().get("width").rstrip("pt")))
        ticks = [g for g in tree.iter(svg + "g") if TICK_FILL in g.get("style", "")
                 and g.find(svg + "use") is not None]
        # Each panel: at least 2 value ticks (0 and the top) and 2 time ticks.
        self.assertGreaterEqual(len(ticks), 4 * len(self.panels))
        heights = sorted({round(float(u.get("y"))) for g in ticks for u in g.iter(svg + "use")})
        self.assertGreaterEqual(len(heights), 2 * len(self.panels))  # value ticks at several heights per panel

    def test_png_has_a_line_across_every_panel(self):
        path = os.path.join(self.tmp, "job.png")
        done = self.gpuscope("4101", f"--plot={path}")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("Job 4101", done.stdout)  # the text report, unchanged on a pipe
        self.assertNotIn("Over time", done.stdout)
        if os.environ.get("GPUSCOPE_KEEP_PLOTS"):  # docs/cli/job-plot-example.png comes from here
            shutil.copy(path, os.environ["GPUSCOPE_KEEP_PLOTS"])
        with open(path, "rb") as f:
            width, height, rows = decode_png(f.read())
        self.assertEqual(width, 1000)
        self.assertGreater(height, 4 * 170)
        # The panels' frames: black horizontal lines across most of the width, top and bottom of each.
        edges = [y for y, row in enumerate(rows) if sum(1 for p in row if p == (0, 0, 0)) > width * 0.8]
        frames = list(zip(edges[0::2], edges[1::2]))
        self.assertEqual(len(frames), len(self.panels), edges)
        left = rows[frames[0][0]].index((0, 0, 0))
        right = width - rows[frames[0][0]][::-1].index((0, 0, 0))
        for top, bottom in frames:
            # Inside a frame, anything but the white background and the grid's grey is a GPU's line:
            # every column of the area crosses one.
            background = ((255, 255, 255), (224, 224, 224))
            columns = sum(1 for x in range(left + 2, right - 2)
                          if any(rows[y][x] not in background for y in range(top + 2, bottom - 1)))
            self.assertGreaterEqual(columns, (right - left - 4) * 0.95, (top, bottom))

    def test_bad_plot_name_is_a_usage_error_and_writes_nothing(self):
        path = os.path.join(self.tmp, "job.pdf")
        done = self.gpuscope("4101", f"--plot={path}")
        self.assertEqual(done.returncode, 2)
        self.assertIn("--plot " + path + ": the file name must end in .png or .svg", done.stderr)
        self.assertEqual(done.stdout, "")  # refused before any query: no report either
        self.assertFalse(os.path.exists(path))
        unwritable = self.gpuscope("4101", "--plot=/nonexistent-dir/job.png")
        self.assertEqual(unwritable.returncode, 1)
        self.assertIn("--plot /nonexistent-dir/job.png: cannot create the file", unwritable.stderr)

    def test_terminal_gets_sparklines_and_no_color_gets_the_means_prometheus_gives(self):
        env = dict(os.environ, LANG="C.UTF-8", LC_ALL="", LC_CTYPE="")
        env.pop("NO_COLOR", None)
        drawn = self.gpuscope_on_terminal("4101", env=env)
        print(drawn)  # for the log: what a person sees
        self.assertIn("\nOver time (", drawn)
        self.assertRegex(drawn, "gpu-node-01/7  \x1b\\[36m[\u2581-\u2588 ]+\x1b\\[0m")
        for line in drawn.splitlines():
            self.assertLessEqual(len(re.sub("\x1b\\[[0-9;]*m", "", line)), 100, line)

        plain = self.gpuscope_on_terminal("4101", env=dict(env, NO_COLOR="1"))
        print(plain.split("\n\n")[-1])  # for the log: the plain section
        self.assertNotIn("\x1b[", plain)
        header = re.search(r"Over time \((\S+ \S+) to (\S+ \S+) UTC, a point every (\d+) s\)", plain)
        self.assertIsNotNone(header, plain)
        # Power, as plain numbers: each GPU's mean equals the mean of the same range query run here.
        section = plain.split("  Power (W")[1].split("\n  Temperature")[0]
        means = dict(re.findall(r"(gpu-node-01/\d+)  min \S+  mean (\S+)", section))
        self.assertEqual(len(means), 8, section)
        start, end = (calendar.timegm(time.strptime(h, "%Y-%m-%d %H:%M:%S")) for h in header.group(1, 2))
        step = int(header.group(3))
        expr = 'DCGM_FI_DEV_POWER_USAGE{hpc_job="4101"}' if step <= 15 else \
            f'avg_over_time(DCGM_FI_DEV_POWER_USAGE{{hpc_job="4101"}}[{step}s])'
        # The section's times are the job's first sighting (fractional) + k * step; compare at whole seconds.
        for r in self.query_range(expr, start, end + 1, step):
            values = [float(v) for _, v in r["values"]]
            key = f"gpu-node-01/{r['metric']['gpu']}"
            shown = float(means[key])  # printed with no decimals from 10 up
            self.assertAlmostEqual(shown, sum(values) / len(values), delta=max(1.0, 0.02 * shown))

        piped = self.gpuscope("4101", env=env)
        self.assertNotIn("Over time", piped.stdout)

    def test_epilog_appends_the_summary_to_a_real_jobs_output(self):
        if not slurm_harness.slurm_available():
            self.skipTest("needs root and Slurm")
        epilog = os.path.join(ROOT, "deploy", "slurm", "job-summary-epilog.sh")
        with slurm_harness.SlurmCluster(
                epilog=epilog, extra_conf="FirstJobId=4101\n",
                script_env={"GPUSCOPE_BIN": GPUSCOPE, "GPUSCOPE_PROMETHEUS_URL": self.prometheus.url,
                            "GPUSCOPE_SYSLOG": "0", "GPUSCOPE_SUMMARY_TIMEOUT": "30"}) as cluster:
            job = cluster.sbatch("echo the job ran", user="alice")
            self.assertEqual(job, "4101")
            harness.wait_for(lambda: "GPU summary" in cluster.job_output(job), 60,
                             "the summary in the job's output\n" + cluster.read_logs())
            text = cluster.job_output(job)
            print(text)
            self.assertTrue(text.startswith("the job ran\n"), text)
            self.assertIn("==== GPU summary (gpuscope job 4101) ====\nJob 4101 (", text)
            self.assertIn("gpu-node-01", text.split("GPU summary")[1])
            out_path = os.path.join(cluster.job_dir, f"slurm-{job}.out")
            self.assertEqual(os.stat(out_path).st_uid, pwd.getpwnam("alice").pw_uid)

            cpu_job = cluster.sbatch("echo no gpus here", user="alice")
            self.assertEqual(cpu_job, "4102")
            # COMPLETED comes after the epilog has ended (COMPLETING until then).
            cluster.wait_for_state(cpu_job, "COMPLETED", timeout=60)
            self.assertEqual(cluster.job_output(cpu_job), "no gpus here\n")


class LongJobFromBackfilledHistory(unittest.TestCase):
    """A job of nearly three hours, backfilled into a real Prometheus with promtool (known answers): the
    step bounds the points (ceil(life / 299) s, here over 15 s, so each point is avg_over_time over its
    step) and the means shown equal the samples' own."""

    JOB_START = int(time.time()) - 3 * 3600
    JOB_END = int(time.time()) - 600

    @staticmethod
    def sm_active(t, gpu):
        return 0.3 + 0.3 * gpu + 0.2 * math.sin(t / 97.0)

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gpuscope-backfill-")
        times = range(cls.JOB_START, cls.JOB_END + 1, 15)
        labels = 'Hostname="bf-node",hpc_job="5101"'
        lines = ["# TYPE gpuscope_job_info gauge"]
        lines += [f'gpuscope_job_info{{{labels},user="bob"}} 1 {t}' for t in times]
        lines.append("# TYPE DCGM_FI_PROF_SM_ACTIVE gauge")
        lines += [f'DCGM_FI_PROF_SM_ACTIVE{{{labels},gpu="{g}"}} {cls.sm_active(t, g)} {t}'
                  for g in (0, 1) for t in times]
        lines.append("# EOF")
        with open(os.path.join(cls.tmp, "history.om"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(cls.tmp, "history.om")) as f:
            cls.prometheus = harness.Prometheus([], openmetrics=f.read())
        try:
            harness.wait_for(lambda: cls.prometheus.query('count_over_time(gpuscope_job_info{hpc_job="5101"}[4h])'),
                             30, "Prometheus to answer from the backfilled blocks")
        except BaseException:
            cls.prometheus.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.prometheus.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_step_bounds_the_points_and_means_match_the_samples(self):
        done = subprocess.run([GPUSCOPE, "job", "5101", f"--prometheus.url={self.prometheus.url}",
                               "--lookback=14400", "--format=json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        report = json.loads(done.stdout)
        # The life as the report finds it (backfilled samples have no staleness marker after the last one,
        # so the last sighting runs up to Prometheus' 5-minute lookback past it).
        self.assertGreaterEqual(report["first_seen"], self.JOB_START)
        self.assertLess(report["first_seen"], self.JOB_START + 15)
        step = math.ceil((report["last_seen"] - report["first_seen"]) / 299)
        self.assertGreater(step, 15)
        svg = os.path.join(self.tmp, "long.svg")
        env = dict(os.environ, LANG="C.UTF-8", LC_ALL="", LC_CTYPE="", NO_COLOR="1")
        code, text, err = run_on_terminal([GPUSCOPE, "job", "5101", f"--prometheus.url={self.prometheus.url}",
                                           "--lookback=14400", f"--plot={svg}"], env)
        self.assertEqual(code, 0, err)
        print(text)
        self.assertIn(f", a point every {step} s)", text)
        # The shown mean of each GPU's step means equals the mean of its raw samples (a few points of the
        # sine's phase differ at the life's ends, hence the tolerance of half a percent).
        times = range(self.JOB_START, self.JOB_END + 1, 15)
        for gpu in (0, 1):
            mean = re.search(rf"bf-node/{gpu}  min \S+  mean (\S+)", text)
            self.assertIsNotNone(mean, text)
            raw = 100 * sum(self.sm_active(t, gpu) for t in times) / len(times)
            self.assertAlmostEqual(float(mean.group(1)), raw, delta=0.5)
        tree = ET.parse(svg)
        series = [p for p in tree.iter("{http://www.w3.org/2000/svg}path") if SERIES_STROKE in p.get("style", "")]
        self.assertEqual(len(series), 2)
        for p in series:  # one point per step: at most 300, and a sine leaves few collinear ones to merge
            points = len(re.findall(r"[ML] ", p.get("d")))
            self.assertLessEqual(points, 300)
            self.assertGreaterEqual(points, 250)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

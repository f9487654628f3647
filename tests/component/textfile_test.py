"""Component: the textfile collector through the agent binary. gpuscope-agent --once on the simulator with
--collector.textfile.directory: a site script's *.prom file appears in /metrics' exposition as written
(help, type, labels, values) beside the GPU series, a file with an explicit timestamp and one over the
size cap are refused whole, logged once, counted by reason, and set gpuscope_textfile_scrape_error to 1; the
output passes `promtool check metrics` but for dcgm-exporter's own names.

Usage: textfile_test.py AGENT SIM_LIBRARY SCENARIO_DIR PROMTOOL"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

AGENT, SIM, SCENARIOS, PROMTOOL = sys.argv[1:5]

GOOD = """# HELP site_health_check_ok 1 when the site's health check passed.
# TYPE site_health_check_ok gauge
site_health_check_ok{check="nccl-allreduce"} 1
site_health_check_ok{check="disk \\"scratch\\""} 0
# HELP site_burnin_runs_total Burn-in runs since the node was installed.
# TYPE site_burnin_runs_total counter
site_burnin_runs_total 12
"""


class TextfileThroughTheAgent(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-textfile-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def run_once(self, *extra):
        env = dict(os.environ, GPUSCOPE_SIM_SCENARIO=os.path.join(SCENARIOS, "h100-training.yaml"),
                   GPUSCOPE_SIM_TIME="600")
        result = subprocess.run([AGENT, "--once", "--nvml.library", SIM, "--attribution.proc=false",
                                 "--no-collector.host", "--no-collector.infiniband",
                                 "--collector.textfile.directory", self.dir, *extra],
                                env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout, result.stderr

    def test_site_file_is_exposed_beside_the_gpu_series_and_bad_files_are_refused_and_counted(self):
        self.write("site.prom", GOOD)
        self.write("late.prom", "site_late_metric 1 1700000000000\n")
        self.write("huge.prom", "# padding\n" * 200)
        self.write("ignored.txt", "site_not_read 1\n")
        out, log = self.run_once("--collector.textfile.max-file-kib", "1")
        for line in GOOD.splitlines():
            self.assertIn(line, out)
        self.assertIn('DCGM_FI_DEV_GPU_UTIL{', out)
        self.assertNotIn("site_late_metric", out)
        self.assertNotIn("site_not_read", out)
        self.assertIn("gpuscope_textfile_scrape_error 1\n", out)
        # --once runs two cycles: each refuses the bad files again (counted), the log says it once.
        self.assertIn('gpuscope_textfile_files_refused_total{reason="invalid"} 2\n', out)
        self.assertIn('gpuscope_textfile_files_refused_total{reason="too_large"} 2\n', out)
        self.assertIn('gpuscope_textfile_mtime_seconds{file="site.prom"} ', out)
        self.assertNotIn('gpuscope_textfile_mtime_seconds{file="late.prom"}', out)
        self.assertIn('file=late.prom reason=invalid error="line 1: site_late_metric: explicit timestamps', log)
        self.assertEqual(log.count("file=huge.prom reason=too_large"), 1, log)
        self.assertEqual(log.count("file=late.prom"), 1, log)

        lint = subprocess.run([PROMTOOL, "check", "metrics"], input=out, capture_output=True, text=True)
        findings = [line for line in (lint.stdout + lint.stderr).splitlines()
                    if line.startswith(("site_", "gpuscope_textfile_"))]
        self.assertEqual(findings, [])

    def test_without_a_directory_nothing_of_the_collector_is_exposed(self):
        env = dict(os.environ, GPUSCOPE_SIM_SCENARIO=os.path.join(SCENARIOS, "h100-training.yaml"))
        out = subprocess.run([AGENT, "--once", "--nvml.library", SIM, "--attribution.proc=false",
                              "--no-collector.host", "--no-collector.infiniband"],
                             env=env, capture_output=True, text=True, timeout=120, check=True).stdout
        self.assertNotIn("gpuscope_textfile_", out.replace('collector="textfile"', ""))


if __name__ == "__main__":
    unittest_main.main(sys.argv[:1])

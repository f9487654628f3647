#!/usr/bin/env python3
"""Proves that `check_mixin.py site DIR`, the check a site runs on the files it generated, refuses what
must not reach a site: the committed files (their receiver, runbook and Grafana data source URLs are
placeholders under .invalid), a variant generated with the demo's values (demo.libsonnet: a loopback
webhook receiver and Prometheus, relative runbook paths), and a site that left one receiver on the
placeholder; and that it accepts a variant in which a site set all of them. Registered by
deploy/mixin/CMakeLists.txt.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "tools"))
import unittest_main  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MIXIN = os.path.dirname(HERE)
CHECK = os.path.join(HERE, "check_mixin.py")
RECEIVERS = ("infra-page", "infra-ticket", "ml-platform-page", "ml-platform-ticket", "job-owner", "namespace-team",
             "service-page", "service-ticket", "security", "info")
# What a site sets (README's example): its alert bridge, its Git web view of docs/runbooks, its Prometheus.
SITE = {
    "runbookUrlBase": "https://git.example.org/gpuscope/-/blob/main/docs/runbooks/",
    "alertmanager": {"webhookBaseUrl": "https://alert-bridge.example.org/gpuscope/"},
    "dashboards": {"prometheusUrl": "http://prometheus.example.org:9090"},
}


def run_check(directory=None):
    out = subprocess.run([sys.executable, CHECK, "site"] + ([directory] if directory else []),
                         capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


class SiteCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="gpuscope-site-check-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def generate(self, name, overrides):
        """A variant generated with overrides (a path, or an object written as JSON)."""
        if not isinstance(overrides, str):
            path = os.path.join(self.workdir, f"{name}.libsonnet")
            with open(path, "w") as f:
                json.dump(overrides, f)
            overrides = path
        out = os.path.join(self.workdir, name)
        subprocess.run([os.path.join(MIXIN, "generate.sh"), "--out", out, "--overrides", overrides], check=True,
                       capture_output=True)
        return out

    def test_the_committed_files_are_refused_until_a_site_sets_its_urls(self):
        rc, output = run_check()
        self.assertEqual(rc, 1, output)
        # One line for all the rules (each alert's, GpuTrainingStraggler's two forms both counted).
        with open(os.path.join(MIXIN, "generated", "prometheus", "alerting_rules.yaml")) as f:
            rules = sum(1 for line in f if line.lstrip().startswith("- alert:"))
        self.assertIn(f"runbook_url of {rules} alert(s)", output)
        self.assertIn("is a placeholder (.invalid never resolves): set runbookUrlBase", output)
        for receiver in RECEIVERS:
            self.assertIn(f"receiver {receiver}: https://alert-receiver.example.invalid/gpuscope/{receiver} is a "
                          f"placeholder", output)
        self.assertIn("Grafana data source Prometheus: https://prometheus.example.invalid is a placeholder", output)

    def test_the_demo_variant_is_refused(self):
        rc, output = run_check(self.generate("demo", os.path.join(MIXIN, "demo.libsonnet")))
        self.assertEqual(rc, 1, output)
        self.assertIn("'docs/runbooks/<AlertName>.md' is not an absolute http(s) URL: set runbookUrlBase", output)
        for receiver in RECEIVERS:
            self.assertIn(f"receiver {receiver}: http://127.0.0.1:9095/{receiver} is the demo's webhook receiver",
                          output)
        self.assertIn("http://127.0.0.1:9090 is the demo's Prometheus (demo.libsonnet): set dashboards.prometheusUrl",
                      output)

    def test_a_receiver_left_on_the_placeholder_is_named(self):
        site = json.loads(json.dumps(SITE))
        site["alertmanager"]["receiverUrls"] = {"info": "https://alert-receiver.example.invalid/gpuscope/info"}
        rc, output = run_check(self.generate("one-left", site))
        self.assertEqual(rc, 1, output)
        failures = [line for line in output.splitlines() if line.startswith("FAIL")]
        self.assertEqual(len(failures), 1, output)
        self.assertIn("receiver info:", failures[0])
        self.assertIn("alertmanager.receiverUrls['info']", failures[0])

    def test_a_site_with_every_url_set_passes(self):
        rc, output = run_check(self.generate("site", SITE))
        self.assertEqual(rc, 0, output)
        self.assertIn("ready to load", output)

    def test_a_folder_without_generated_files_is_refused(self):
        empty = os.path.join(self.workdir, "empty")
        os.makedirs(empty, exist_ok=True)
        rc, output = run_check(empty)
        self.assertEqual(rc, 1, output)
        self.assertIn("alerting_rules.yaml: missing", output)


if __name__ == "__main__":
    unittest_main.main()

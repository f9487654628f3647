"""Integration: the shipped Prometheus scrape jobs (deploy/prometheus/gpuscope-scrape.yml and
node-exporter-scrape.yml) as a site pastes them. promtool accepts both files; then a real Prometheus runs
them as shipped, with only their targets pointed at an agent on the simulator and a real node_exporter
on loopback and the intervals shortened, and the series carry what the monitoring mixin assumes
(deploy/mixin/config.libsonnet): the job its selectors name, every label of labels.clusterLabels, and an
`instance` without the port on which the host's GPU and node series join.

Usage: scrape_config_test.py AGENT SIM_LIBRARY PROMTOOL NODE_EXPORTER (Python with PyYAML)"""

import json
import os
import subprocess
import sys
import unittest

import yaml  # PyYAML (the project's virtualenv, scripts/install-deps.sh): jsonnet 0.18's parser aborts on these files

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402

AGENT, SIM, PROMTOOL, NODE_EXPORTER = sys.argv[1:5]
SHIPPED = os.path.join(fleet.ROOT, "deploy", "prometheus")
GPUSCOPE_JOB = os.path.join(SHIPPED, "gpuscope-scrape.yml")
NODE_JOB = os.path.join(SHIPPED, "node-exporter-scrape.yml")


def shipped_job(path, target):
    """The file's one scrape job as shipped, its targets replaced by target and scraped every second."""
    with open(path) as f:
        jobs = yaml.safe_load(f)["scrape_configs"]
    assert len(jobs) == 1, f"{path}: one scrape job expected"
    job = jobs[0]
    for static in job["static_configs"]:
        static["targets"] = [target]
    job["scrape_interval"] = job["scrape_timeout"] = "1s"
    return job


class ShippedScrapeConfigs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mixin = fleet.jsonnet_json("import 'config.libsonnet'")
        cls.agent = harness.Agent(AGENT, SIM, os.path.join(fleet.SCENARIOS, "h100-training.yaml"))
        cls.node_exporter = None
        cls.prometheus = None
        try:
            port = harness.free_port()
            cls.node_exporter = subprocess.Popen(
                [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            harness.wait_for(lambda: harness.http_get(f"http://127.0.0.1:{port}/metrics")[0] == 200, 30,
                             "node_exporter")
            jobs = [shipped_job(GPUSCOPE_JOB, f"127.0.0.1:{cls.agent.port}"), shipped_job(NODE_JOB, f"127.0.0.1:{port}")]
            # JSON is YAML: Prometheus reads the jobs as written.
            config = json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs}, indent=1)
            cls.prometheus = harness.Prometheus([], config=config)
            cls.gpuscope_labels = jobs[0]["static_configs"][0].get("labels", {})
            harness.wait_for(lambda: len(cls.prometheus.query("up == 1")) == 2, 60, "both jobs scraped")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.prometheus:
            cls.prometheus.stop()
        if cls.node_exporter:
            cls.node_exporter.terminate()
            cls.node_exporter.wait()
        cls.agent.stop()
        cls.agent.cleanup()

    def test_promtool_accepts_the_shipped_files(self):
        for path in (GPUSCOPE_JOB, NODE_JOB):
            with self.subTest(file=os.path.basename(path)):
                out = subprocess.run([PROMTOOL, "check", "config", path], capture_output=True, text=True)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_the_mixin_selector_finds_the_agent_with_job_and_host_instance(self):
        series = self.prometheus.query(f"gpuscope_gpu_info{{{self.mixin['selectors']['gpuscope']}}}")
        self.assertEqual(len(series), 8, "the 8 simulated GPUs")
        for s in series:
            self.assertEqual(s["metric"]["job"], "gpuscope")
            self.assertEqual(s["metric"]["instance"], "127.0.0.1", "the host without the port")
        self.assertEqual(len(self.prometheus.query(f"up{{{self.mixin['selectors']['slurm']}}} == 1")), 1)

    def test_every_cluster_label_of_the_mixin_is_on_the_agent_series(self):
        for label in self.mixin["labels"]["clusterLabels"]:
            with self.subTest(label=label):
                self.assertIn(label, self.gpuscope_labels, f"{GPUSCOPE_JOB} sets no {label} label")
                # As a recording rule of the mixin aggregates: by the cluster label, which must survive.
                by_cluster = self.prometheus.query(f"count by ({label}) (gpuscope_gpu_info{{"
                                                   f"{self.mixin['selectors']['gpuscope']}}})")
                self.assertEqual([(s["metric"].get(label), s["value"][1]) for s in by_cluster],
                                 [(self.gpuscope_labels[label], "8")])

    def test_gpu_and_node_series_of_a_host_join_on_instance(self):
        joined = self.prometheus.query('gpuscope_gpu_info{job="gpuscope"} * on (instance) group_left (nodename) '
                                       'node_uname_info{job="node"}')
        self.assertEqual(len(joined), 8)
        self.assertTrue(all(s["metric"].get("nodename") for s in joined))


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

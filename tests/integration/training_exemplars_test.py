"""Integration: the step-duration histogram of the training collector, read by real Prometheus 3.

A rank instrumented with python/gpuscope (as a Slurm job's process: SLURM_JOB_ID in its environment)
reports STEPS steps to the agent: all of them FAST_SECONDS long but one, step SLOW_STEP, which takes
SLOW_SECONDS. Prometheus 3 scrapes the agent asking for OpenMetrics only, with exemplar storage on; a
second Prometheus 3 receives the agent's remote_write 2.0 pushes. Then:
  - /api/v1/query_exemplars has the exemplar of the slow step on the bucket it fell in, its trace_id the
    step's trace (SHA-256 over "gpuscope.training.step-trace" and the length-prefixed job and step, as
    src/collectors/training/trace_ids.cc makes it, computed here with hashlib: training_steps.py), its
    value the step's time;
  - histogram_quantile over the scraped buckets gives a median between the fast steps' bucket bounds;
  - the pushed _bucket, _count and _sum series hold the same counts as the scraped ones, under the same
    le values (Prometheus 3 normalises le when it scrapes; the agent writes them in that form).

Usage: training_exemplars_test.py AGENT SIM_LIBRARY REPO_ROOT PROMETHEUS3"""

import json
import os
import sys
import tempfile
import time
import unittest
import urllib.parse

AGENT, SIM, ROOT, PROMETHEUS3 = sys.argv[1:5]
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import harness  # noqa: E402
import unittest_main  # noqa: E402
from training_steps import run_rank, step_trace_id  # noqa: E402

JOB = "4242"
STEPS = 12
SLOW_STEP = 7
FAST_SECONDS = 0.03
SLOW_SECONDS = 0.3
FAMILY = "gpuscope_training_step_duration_seconds"


def by_le(result):
    return {r["metric"]["le"]: float(r["value"][1]) for r in result}


class StepHistogramInPrometheus3(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpuscope-exemplars-")
        cls.socket = os.path.join(cls.dir, "training.sock")
        cls.receiver = harness.Prometheus([], binary=PROMETHEUS3,
                                          config="global: {scrape_interval: 1m}\nscrape_configs: []\n",
                                          extra_args=["--web.enable-remote-write-receiver"])
        cls.agent = harness.Agent(
            AGENT, SIM, os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml"),
            extra_args=["--collector.training", "--collector.training.interval=1s",
                        f"--training.socket={cls.socket}",
                        "--sink.remote-write.url", cls.receiver.url + "/api/v1/write",
                        "--sink.remote-write.interval", "1s", "--sink.remote-write.protocol", "2.0",
                        "--events.state-dir", os.path.join(cls.dir, "state")])
        cls.scraper = harness.Prometheus(
            [f"127.0.0.1:{cls.agent.port}"], binary=PROMETHEUS3,
            scrape_extra="    scrape_protocols: [OpenMetricsText1.0.0]\n",
            extra_args=["--enable-feature=exemplar-storage"])
        harness.wait_for(lambda: os.path.exists(cls.socket), 30, "the training socket")
        cls.started = time.time()
        run_rank(os.path.join(ROOT, "python"), cls.socket, JOB,
                 [SLOW_SECONDS if step == SLOW_STEP else FAST_SECONDS for step in range(STEPS)])

    @classmethod
    def tearDownClass(cls):
        for peer in (cls.scraper, cls.receiver):
            peer.stop()
        cls.agent.stop()
        cls.agent.cleanup()

    def scraped_count(self):
        result = self.scraper.query(f'{FAMILY}_count{{hpc_job="{JOB}"}}')
        return result if result and float(result[0]["value"][1]) == STEPS else None

    def test_the_slow_steps_bucket_carries_its_trace_id_as_an_exemplar(self):
        harness.wait_for(self.scraped_count, 60, "every step scraped")

        def slow_exemplar():
            params = urllib.parse.urlencode({"query": f'{FAMILY}_bucket{{hpc_job="{JOB}"}}',
                                             "start": f"{self.started - 60:.3f}", "end": f"{time.time() + 60:.3f}"})
            body = json.loads(harness.http_get(self.scraper.url + "/api/v1/query_exemplars?" + params)[2])
            self.assertEqual(body["status"], "success", body)
            for series in body["data"]:
                for exemplar in series["exemplars"]:
                    if float(exemplar["value"]) > SLOW_SECONDS * 0.9:
                        return series["seriesLabels"], exemplar
            return None

        labels, exemplar = harness.wait_for(slow_exemplar, 30, "the slow step's exemplar")
        self.assertEqual(exemplar["labels"], {"trace_id": step_trace_id(JOB, SLOW_STEP)})
        self.assertLess(float(exemplar["value"]), SLOW_SECONDS + 0.1)
        self.assertEqual(labels["le"], "0.5")  # the bucket (0.25, 0.5] the 0.3 s step fell in
        self.assertEqual(labels["rank"], "0")
        self.assertGreater(float(exemplar["timestamp"]), self.started)
        self.assertLess(float(exemplar["timestamp"]), time.time())
        print(f"exemplar {exemplar} on {labels}")

    def test_the_median_step_time_from_the_buckets_lies_in_the_fast_steps_bucket(self):
        harness.wait_for(self.scraped_count, 60, "every step scraped")
        result = self.scraper.query(
            f'histogram_quantile(0.5, sum by (hpc_job, le) ({FAMILY}_bucket{{hpc_job="{JOB}"}}))')
        self.assertEqual(len(result), 1, result)
        median = float(result[0]["value"][1])
        self.assertGreater(median, 0.025)  # 11 of the 12 steps took 0.03 s: bucket (0.025, 0.05]
        self.assertLessEqual(median, 0.05)
        mean = self.scraper.query(f'{FAMILY}_sum{{hpc_job="{JOB}"}} / {FAMILY}_count{{hpc_job="{JOB}"}}')
        expected = ((STEPS - 1) * FAST_SECONDS + SLOW_SECONDS) / STEPS
        self.assertAlmostEqual(float(mean[0]["value"][1]), expected, delta=0.02)
        print(f"median {median:.4f} s, mean {float(mean[0]['value'][1]):.4f} s")

    def test_the_pushed_series_hold_the_scraped_counts_under_the_same_le_values(self):
        harness.wait_for(self.scraped_count, 60, "every step scraped")
        scraped = by_le(self.scraper.query(f'{FAMILY}_bucket{{hpc_job="{JOB}"}}'))
        pushed = harness.wait_for(
            lambda: (lambda r: r if r.get("+Inf") == STEPS else None)(
                by_le(self.receiver.query(f'{FAMILY}_bucket{{hpc_job="{JOB}"}}'))), 60, "the pushed buckets")
        self.assertEqual(pushed, scraped)
        self.assertEqual(len(pushed), 16)  # 15 bounds and +Inf
        self.assertEqual(pushed["0.05"], STEPS - 1)
        self.assertEqual(pushed["0.5"], STEPS)
        count = self.receiver.query(f'{FAMILY}_count{{hpc_job="{JOB}"}}')
        self.assertEqual(float(count[0]["value"][1]), STEPS)
        total = self.receiver.query(f'{FAMILY}_sum{{hpc_job="{JOB}"}}')
        self.assertAlmostEqual(float(total[0]["value"][1]), (STEPS - 1) * FAST_SECONDS + SLOW_SECONDS, delta=0.1)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

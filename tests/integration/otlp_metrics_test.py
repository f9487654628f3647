"""Integration: the agent's OTLP metrics sink against a real OpenTelemetry Collector (its OTLP receiver and
file exporter, built from pinned modules by scripts/build-peers.sh) on loopback. The agent runs on the NVML
simulator at frozen simulated time and pushes every second; the test reads the metrics the Collector
decoded from the file exporter's JSON lines. Proves: every family whose values /metrics shows the same
twice arrives with exactly those data points (the sample's labels as attributes, gpu and UUID included);
gauges arrive as Gauge, counters as cumulative monotonic Sum with a start time before their time, info
families as Gauges of 1; help as description, unit where the family has one; one resource (service.name,
host.name) and the agent's version as the scope's; a job from dcgm-exporter's mapping directory as the
hpc_job attribute of its GPUs' points and gpuscope_job_info. With the Collector stopped for a few intervals
and started again, every queued request arrives once, in time order.

Usage: otlp_metrics_test.py AGENT SIM_LIBRARY OTELCOL SCENARIO_DIR"""

import math
import os
import re
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import peers  # noqa: E402
from harness import metric  # noqa: E402

AGENT, SIM, OTELCOL, SCENARIOS = sys.argv[1:5]
FROZEN = {"GPUSCOPE_SIM_TIME": "900"}
CUMULATIVE = 2  # AggregationTemporality in OTLP/JSON: the enum's number


def exposition(text):
    """({family: {frozenset(labels): value}}, {family: type}, {family: help}) from /metrics."""
    values = harness.exposition_families(text)
    types, helps = {}, {}
    for line in text.splitlines():
        match = re.match(r"^# (TYPE|HELP) (\S+) ?(.*)$", line)
        if match:
            (types if match.group(1) == "TYPE" else helps)[match.group(2)] = match.group(3)
    return values, types, helps


def value_of(point):
    return float(point["asDouble"]) if "asDouble" in point else float(point.get("asInt", 0))


def same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


class OtlpMetricsIntoOtelcol(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-otlp-metrics-test-")
        self.collector = peers.OtelCollector(OTELCOL)
        self.agent = None

    def tearDown(self):
        failed = harness.failed(self)
        if self.agent is not None:
            if failed:
                print(f"--- agent log ---\n{self.agent.read_log()[-4000:]}", file=sys.stderr)
            self.agent.stop()
            self.agent.cleanup()
        if failed:
            print(f"--- otelcol log ---\n{self.collector.read_log()[-4000:]}", file=sys.stderr)
        self.collector.cleanup()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def push_args(self):
        return ["--sink.otlp.metrics-url", self.collector.url + "/v1/metrics", "--sink.otlp.metrics-interval", "1s",
                "--events.state-dir", os.path.join(self.workdir, "state")]

    def job_mapping(self):
        """dcgm-exporter's job mapping directory: job 4242 on GPUs 0 and 1."""
        directory = os.path.join(self.workdir, "job-mapping")
        os.makedirs(directory)
        for gpu in ("0", "1"):
            with open(os.path.join(directory, gpu), "w") as f:
                f.write("4242\n")
        return directory

    def latest_metrics(self):
        """(resource, scope, {name: Metric}) of the newest metrics request the Collector wrote."""
        for request in reversed(self.collector.requests()):
            for resource_metrics in request.get("resourceMetrics", []):
                resource = peers.attributes(resource_metrics.get("resource", {}).get("attributes", []))
                for scope_metrics in resource_metrics.get("scopeMetrics", []):
                    return resource, scope_metrics.get("scope", {}), {
                        m["name"]: m for m in scope_metrics.get("metrics", [])}
        return None

    def test_every_stable_family_arrives_with_the_values_metrics_shows(self):
        self.agent = harness.Agent(
            AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), env=FROZEN,
            extra_args=self.push_args() + ["--hpc-job-mapping-dir", self.job_mapping()])

        def eight_gpus():
            latest = self.latest_metrics()
            temp = latest and latest[2].get("DCGM_FI_DEV_GPU_TEMP")
            return temp and len(temp["gauge"]["dataPoints"]) == 8
        harness.wait_for(eight_gpus, 30, "eight GPUs' temperatures in the Collector's file")
        first, _, _ = exposition(self.agent.metrics())
        time.sleep(2.5)  # two more requests
        second, types, helps = exposition(self.agent.metrics())
        resource, scope, metrics = self.latest_metrics()

        self.assertEqual(resource["service.name"], "gpuscope-agent")
        self.assertEqual(resource["host.name"], "sim-node")
        self.assertTrue(scope.get("version"), "the agent's version as the scope's")
        stable = {name for name in second
                  if name in first and first[name].keys() == second[name].keys() and
                  all(same(first[name][k], second[name][k]) for k in second[name])}
        self.assertGreater(len(stable), 40, "the simulator's families are stable at frozen time")
        mismatches = []
        for name in sorted(stable):
            metric = metrics.get(name)
            if metric is None:
                mismatches.append((name, "missing"))
                continue
            data = metric.get("sum") or metric.get("gauge")
            got = {frozenset(peers.attributes(p.get("attributes", [])).items()): value_of(p)
                   for p in data["dataPoints"]}
            expected = second[name]
            if got.keys() != expected.keys() or not all(same(got[k], expected[k]) for k in expected):
                mismatches.append((name, expected, got))
        self.assertEqual(mismatches, [])

        # Types: gauge -> Gauge, counter -> cumulative monotonic Sum, info -> Gauge of 1.
        kinds = {}
        for name in stable:
            family_type = types.get(name) or types.get(re.sub(r"_total$", "", name))
            kinds.setdefault(family_type, []).append(name)
            metric = metrics[name]
            if family_type == "counter":
                self.assertEqual(metric["sum"]["aggregationTemporality"], CUMULATIVE, name)
                self.assertTrue(metric["sum"]["isMonotonic"], name)
                for point in metric["sum"]["dataPoints"]:
                    self.assertLessEqual(int(point["startTimeUnixNano"]), int(point["timeUnixNano"]), name)
            else:
                self.assertIn("gauge", metric, name)
                if family_type == "info":
                    self.assertTrue(all(value_of(p) == 1 for p in metric["gauge"]["dataPoints"]), name)
        self.assertTrue(kinds.get("counter"), "a counter among the stable families")
        self.assertTrue(kinds.get("gauge"))

        temp = metrics["DCGM_FI_DEV_GPU_TEMP"]
        self.assertEqual(temp.get("description"), helps.get("DCGM_FI_DEV_GPU_TEMP"))
        points = {peers.attributes(p["attributes"])["gpu"]: peers.attributes(p["attributes"])
                  for p in temp["gauge"]["dataPoints"]}
        self.assertEqual(sorted(points), [str(i) for i in range(8)])
        for gpu, attributes in points.items():
            self.assertRegex(attributes["UUID"], r"^GPU-[0-9a-f-]+$")
            self.assertEqual(attributes.get("hpc_job"), "4242" if gpu in ("0", "1") else None, gpu)
        self.assertIn("gpuscope_job_info", stable)
        job_points = metrics["gpuscope_job_info"]["gauge"]["dataPoints"]
        self.assertEqual([(peers.attributes(p["attributes"]).get("hpc_job"), value_of(p)) for p in job_points],
                         [("4242", 1.0)])
        self.assertTrue(any(m.get("unit") for m in metrics.values()), "the families with a unit carry it")

    def test_requests_queued_while_otelcol_is_down_arrive_after_restart(self):
        self.agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), env=FROZEN,
                                   extra_args=self.push_args())

        def times():
            """time_unix_nano of every GPU 0 temperature received, in arrival order."""
            out = []
            for request in self.collector.requests():
                for resource_metrics in request.get("resourceMetrics", []):
                    for scope_metrics in resource_metrics.get("scopeMetrics", []):
                        for m in scope_metrics.get("metrics", []):
                            if m["name"] == "DCGM_FI_DEV_GPU_TEMP":
                                out += [int(p["timeUnixNano"]) for p in m["gauge"]["dataPoints"]
                                        if peers.attributes(p["attributes"])["gpu"] == "0"]
            return out

        harness.wait_for(lambda: len(times()) >= 1, 30, "a first request in the Collector's file")
        self.collector.stop()
        stopped_ns = time.time_ns()
        harness.wait_for(lambda: (metric(self.agent, "gpuscope_sink_failed_requests_total", sink="otlp_metrics")
                                  or 0) >= 3, 30, "three failed pushes")
        self.collector.start()
        restarted_ns = time.time_ns()
        received = harness.wait_for(lambda: (lambda t: t if t and t[-1] > restarted_ns + 2 * 10**9 else None)(times()),
                                    60, "requests queued after the restart in the file")
        self.assertEqual(received, sorted(received), "out of time order")
        self.assertEqual(len(received), len(set(received)), "a request received twice")
        # The producer queues one request a second whether or not the Collector is up: every one of them
        # arrived when no two consecutive ones are much more than an interval apart.
        gaps = [b - a for a, b in zip(received, received[1:])]
        self.assertLess(max(gaps), 1.9 * 10**9, gaps)  # a lost one makes a gap of two intervals
        self.assertGreaterEqual(len([t for t in received if stopped_ns < t < restarted_ns]), 3,
                                "requests queued during the outage")
        self.assertEqual(metric(self.agent, "gpuscope_queue_dropped_total", queue="otlp_metrics") or 0, 0)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[5:])

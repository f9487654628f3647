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

A job from gpuscope's own mapping record (with user and account) puts hpc_job, user and account on its
GPUs' points. kill -9 of the agent while it pushes, several times: every request any incarnation queued
reaches the Collector. Against our own receiver (tests named fault_receiver: a real Collector neither
answers 400 on demand nor shows the headers it got): a 400 drops the request and counts it, a 503 keeps it
queued until the receiver takes it; --sink.otlp.header and the bearer token file reach the receiver. The
Collector with its bearertokenauth extension refuses a wrong token (401: dropped, counted) and takes a
rotated right one at the next request; with TLS it requires and checks the agent's client certificate.
A training rank's steps (python/gpuscope) arrive as a cumulative Histogram: per-bucket counts, the bounds,
and the slow step's exemplar with its trace id.

Usage: otlp_metrics_test.py AGENT SIM_LIBRARY OTELCOL SCENARIO_DIR PUSH_RECEIVER"""

import math
import os
import re
import shutil
import signal
import ssl
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
from training_steps import run_rank, step_trace_id  # noqa: E402

AGENT, SIM, OTELCOL, SCENARIOS, PUSH_RECEIVER = sys.argv[1:6]
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
            self.agent.finish(show_log=failed)
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

    def points(self, name):
        """(timeUnixNano, attributes) of every data point of metric `name` received, in arrival order."""
        out = []
        for request in self.collector.requests():
            for resource_metrics in request.get("resourceMetrics", []):
                for scope_metrics in resource_metrics.get("scopeMetrics", []):
                    for m in scope_metrics.get("metrics", []):
                        if m["name"] == name:
                            data = m.get("gauge") or m.get("sum")
                            out += [(int(p["timeUnixNano"]), peers.attributes(p.get("attributes", [])))
                                    for p in data["dataPoints"]]
        return out

    def test_a_jobs_user_and_account_arrive_as_attributes_of_its_gpus_points(self):
        directory = os.path.join(self.workdir, "job-mapping")
        os.makedirs(directory)
        with open(os.path.join(directory, "gpuscope-job.5151"), "w") as f:  # what deploy/slurm/prolog.sh writes
            f.write("version=1\njob_id=5151\nuser=alice\nuid=1000\naccount=physics\npartition=gpu\n"
                    "job_name=train\ngpus=2,3\n")
        self.agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), env=FROZEN,
                                   extra_args=self.push_args() + ["--hpc-job-mapping-dir", directory])

        def latest_temps():
            latest = self.latest_metrics()
            temp = latest and latest[2].get("DCGM_FI_DEV_GPU_TEMP")
            if not temp or len(temp["gauge"]["dataPoints"]) != 8:
                return None
            points = {}
            for p in temp["gauge"]["dataPoints"]:
                attributes = peers.attributes(p["attributes"])
                points[attributes["gpu"]] = attributes
            return points if points["2"].get("hpc_job") else None
        points = harness.wait_for(latest_temps, 30, "the job on GPUs 2 and 3 in the Collector's file")
        for gpu, attributes in points.items():
            identity = {k: attributes.get(k) for k in ("hpc_job", "user", "account")}
            expected = ({"hpc_job": "5151", "user": "alice", "account": "physics"} if gpu in ("2", "3")
                        else {"hpc_job": None, "user": None, "account": None})
            self.assertEqual(identity, expected, gpu)
            self.assertRegex(attributes["UUID"], r"^GPU-[0-9a-f-]+$")
        job_info = [a for _, a in self.points("gpuscope_job_info") if a.get("hpc_job") == "5151"]
        self.assertTrue(job_info)
        self.assertEqual((job_info[-1]["user"], job_info[-1]["account"], job_info[-1]["partition"]),
                         ("alice", "physics", "gpu"))

    def test_a_training_step_histogram_arrives_as_a_cumulative_histogram_with_the_slow_steps_trace(self):
        socket_path = os.path.join(self.workdir, "training.sock")
        self.agent = harness.Agent(
            AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"),
            extra_args=self.push_args() + ["--collector.training", "--collector.training.interval=1s",
                                           f"--training.socket={socket_path}"])
        harness.wait_for(lambda: os.path.exists(socket_path), 30, "the training socket")
        steps = [0.03, 0.03, 0.3, 0.03, 0.03]  # step 2 is the slow one
        run_rank(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"), socket_path,
                 4343, steps)

        def all_steps():
            latest = self.latest_metrics()
            histogram = latest and latest[2].get("gpuscope_training_step_duration_seconds", {}).get("histogram")
            points = histogram and [p for p in histogram["dataPoints"]
                                    if peers.attributes(p["attributes"]).get("hpc_job") == "4343"]
            return (histogram, points[0]) if points and int(points[0]["count"]) == len(steps) else None
        histogram, point = harness.wait_for(all_steps, 30, "every step in the Collector's file")
        self.assertEqual(histogram["aggregationTemporality"], CUMULATIVE)
        bounds = [float(b) for b in point["explicitBounds"]]
        self.assertEqual(bounds, [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600])
        counts = [int(c) for c in point["bucketCounts"]]
        self.assertEqual(len(counts), len(bounds) + 1)
        self.assertEqual(counts[2], 4)  # (0.025, 0.05]: the four fast steps, per bucket, not cumulative
        self.assertEqual(counts[5], 1)  # (0.25, 0.5]: the slow one
        self.assertEqual(sum(counts), len(steps))
        self.assertAlmostEqual(float(point["sum"]), sum(steps), delta=0.1)
        self.assertEqual(peers.attributes(point["attributes"])["rank"], "0")
        slow = [e for e in point.get("exemplars", []) if e["asDouble"] > 0.25]
        self.assertEqual(len(slow), 1, point.get("exemplars"))
        self.assertEqual(slow[0]["traceId"], step_trace_id(4343, 2))
        self.assertGreater(int(slow[0]["timeUnixNano"]), int(point["startTimeUnixNano"]))

    def test_kill_9_while_pushing_loses_no_request(self):
        state = os.path.join(self.workdir, "state")
        queued = 0
        kills = 3

        def gpu0_times():
            return [t for t, a in self.points("DCGM_FI_DEV_GPU_TEMP") if a.get("gpu") == "0"]
        for _ in range(kills):
            agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), env=FROZEN,
                                  extra_args=self.push_args())
            harness.wait_for(lambda: (metric(agent, "gpuscope_queue_appended_total", queue="otlp_metrics") or 0) >= 2,
                             20, "two requests queued")
            queued += metric(agent, "gpuscope_queue_appended_total", queue="otlp_metrics")
            agent.process.send_signal(signal.SIGKILL)
            agent.process.wait()
            agent.log.close()
            agent.cleanup()
        # A last incarnation on the same queue sends what the killed ones left.
        self.agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), env=FROZEN,
                                   extra_args=self.push_args())
        harness.wait_for(lambda: (metric(self.agent, "gpuscope_queue_records", queue="otlp_metrics") == 0 and
                                  (metric(self.agent, "gpuscope_sink_sent_records_total", sink="otlp_metrics") or 0) > 0),
                         40, "the queue to drain")
        queued_now = metric(self.agent, "gpuscope_queue_appended_total", queue="otlp_metrics")
        self.assertTrue(os.path.isdir(os.path.join(state, "queue", "otlp_metrics")))
        times = harness.wait_for(lambda: (lambda t: t if len(set(t)) >= queued + queued_now else None)(gpu0_times()),
                                 30, f"{queued} + {queued_now} requests' points in the Collector's file")
        distinct = sorted(set(times))
        # Each killed incarnation may have queued one more request after it was read; a resend after a kill
        # repeats only what was sent and not yet acknowledged.
        self.assertLessEqual(len(distinct), queued + queued_now + kills + 3)
        self.assertEqual(metric(self.agent, "gpuscope_queue_dropped_total", queue="otlp_metrics") or 0, 0)

    def test_a_client_certificate_the_collector_requires_over_https(self):
        certs = harness.make_certificates(self.workdir)
        context = ssl.create_default_context(cafile=certs["ca"])
        context.load_cert_chain(certs["client_cert"], certs["client_key"])
        self.collector.cleanup()
        self.collector = peers.OtelCollector(OTELCOL, context=context, tls={
            "cert_file": certs["server_cert"], "key_file": certs["server_key"], "client_ca_file": certs["ca"]})
        # Without a client certificate the Collector ends the handshake: the requirement is real.
        with self.assertRaises(OSError):
            harness.http_get(self.collector.url + "/v1/metrics", context=ssl.create_default_context(cafile=certs["ca"]))
        self.agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), env=FROZEN,
                                   extra_args=self.push_args() + [
                                       "--sink.tls.ca-file", certs["ca"], "--sink.otlp.tls.cert-file",
                                       certs["client_cert"], "--sink.otlp.tls.key-file", certs["client_key"]])
        harness.wait_for(lambda: self.points("DCGM_FI_DEV_GPU_TEMP"), 30, "points over https in the Collector's file")

    def test_the_collector_checks_the_bearer_token_a_wrong_one_is_dropped_a_rotated_one_used_at_once(self):
        self.collector.cleanup()
        self.collector = peers.OtelCollector(OTELCOL, bearer_token="right-token")
        token = os.path.join(self.workdir, "token")
        with open(token, "w") as f:
            f.write("wrong-token\n")
        self.agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), env=FROZEN,
                                   extra_args=self.push_args() + ["--sink.otlp.bearer-token-file", token])
        harness.wait_for(lambda: (metric(self.agent, "gpuscope_sink_requests_total", sink="otlp_metrics", code="401")
                                  or 0) >= 2, 30, "two requests refused with 401")
        self.assertGreaterEqual(metric(self.agent, "gpuscope_sink_dropped_records_total", sink="otlp_metrics"), 2)
        self.assertEqual(self.points("DCGM_FI_DEV_GPU_TEMP"), [])
        with open(token + ".new", "w") as f:
            f.write("right-token\n")
        os.rename(token + ".new", token)  # rotated as a secret manager does: the next request reads it
        harness.wait_for(lambda: self.points("DCGM_FI_DEV_GPU_TEMP"), 30, "points with the rotated token")

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



class FaultReceiverOtlpMetrics(unittest.TestCase):
    """Our own receiver: answers a real Collector does not give on demand, and the headers it got."""

    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-otlp-metrics-fault-")
        self.receiver = harness.FaultReceiver(PUSH_RECEIVER, self.workdir)
        self.agent = None

    def tearDown(self):
        if self.agent is not None:
            self.agent.stop()
            self.agent.cleanup()
        self.receiver.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def start_agent(self, *extra):
        self.agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), env=FROZEN, extra_args=[
            "--sink.otlp.metrics-url", self.receiver.url("/v1/metrics"), "--sink.otlp.metrics-interval", "1s",
            "--events.state-dir", os.path.join(self.workdir, "state"), *extra])

    def sink(self, name, **labels):
        return metric(self.agent, name, **labels) or 0

    def test_fault_receiver_400_drops_and_counts_503_keeps_queued_until_accepted(self):
        self.receiver.set_mode("400")
        self.start_agent()
        harness.wait_for(lambda: self.sink("gpuscope_sink_dropped_records_total", sink="otlp_metrics") >= 2, 30,
                         "two requests dropped on 400")
        self.assertEqual(self.sink("gpuscope_sink_retry_backoff_seconds", sink="otlp_metrics"), 0,
                         "a 400 is not retried")
        self.assertLessEqual(self.sink("gpuscope_queue_records", queue="otlp_metrics"), 1, "only the newest waits")
        self.assertEqual(self.receiver.entries(), [])
        self.receiver.set_mode("503")
        failed = self.sink("gpuscope_sink_failed_requests_total", sink="otlp_metrics")
        harness.wait_for(lambda: self.sink("gpuscope_queue_records", queue="otlp_metrics") >= 3, 30,
                         "three requests kept queued on 503")
        self.assertGreater(self.sink("gpuscope_sink_failed_requests_total", sink="otlp_metrics"), failed)
        dropped = self.sink("gpuscope_sink_dropped_records_total", sink="otlp_metrics")
        waiting = self.sink("gpuscope_queue_records", queue="otlp_metrics")
        self.receiver.set_mode("ok")
        harness.wait_for(lambda: self.sink("gpuscope_queue_records", queue="otlp_metrics") == 0, 40,
                         "the queue to drain")
        # Every request the 503 held arrived (requests join up to ten to a body), and none was dropped.
        self.assertEqual(self.sink("gpuscope_sink_dropped_records_total", sink="otlp_metrics"), dropped)
        self.assertGreaterEqual(self.sink("gpuscope_sink_sent_records_total", sink="otlp_metrics"), waiting)
        self.assertTrue(self.receiver.entries())

    def test_fault_receiver_sees_the_otlp_headers_and_bearer_token(self):
        token = os.path.join(self.workdir, "token")
        with open(token, "w") as f:
            f.write("otlp-token\n")
        self.start_agent("--sink.otlp.header", "X-Api-Key=k1", "--sink.otlp.header=X-Scope-OrgID=team-a",
                         "--sink.otlp.bearer-token-file", token)
        entries = harness.wait_for(self.receiver.entries, 30, "a metrics push")
        headers = entries[0]["headers"]
        self.assertEqual(entries[0]["target"], "/v1/metrics")
        self.assertEqual(headers["x-api-key"], "k1")
        self.assertEqual(headers["x-scope-orgid"], "team-a")
        self.assertEqual(headers["authorization"], "Bearer otlp-token")
        self.assertEqual(headers["content-type"], "application/x-protobuf")

if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[6:])

"""Integration: gpuscope-agent on the NVML simulator pushes its metrics by remote_write 1.0 to real
receivers on loopback (Debian's Prometheus 2.42 with --web.enable-remote-write-receiver, Debian's
VictoriaMetrics 1.79): at frozen simulated time PromQL returns exactly what /metrics shows, for every
family; a receiver that is down for a while gets everything afterwards, in order; kill -9 of the agent
while it pushes loses no sample.

Usage: remote_write_test.py AGENT SIM_LIBRARY SCENARIO_DIR [TestClass ...]"""

import math
import os
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402

AGENT, SIM, SCENARIOS = sys.argv[1:4]
SCENARIO = os.path.join(SCENARIOS, "h100-training.yaml")
FROZEN = {"GPUSCOPE_SIM_TIME": "900"}
EXTERNAL = ("cluster", "c1")
RECEIVER_ARGS = ["--web.enable-remote-write-receiver"]
NO_SCRAPE = "global: {scrape_interval: 1m}\nscrape_configs: []\n"


def push_args(url, state_dir, protocol="1.0"):
    return ["--sink.remote-write.url", url, "--sink.remote-write.interval", "1s",
            "--sink.remote-write.protocol", protocol,
            "--sink.remote-write.external-label", "=".join(EXTERNAL), "--events.state-dir", state_dir]


def unescape(value):
    return value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def exposition_by_family(text):
    """{family: {frozenset(labels incl. the external label): value}} from /metrics."""
    out = {}
    for (name, labels), value in harness.parse_exposition(text).items():
        key = frozenset({(k, unescape(v)) for k, v in labels} | {EXTERNAL})
        out.setdefault(name, {})[key] = value
    return out


def result_by_labels(result):
    return {frozenset((k, v) for k, v in r["metric"].items() if k != "__name__"): float(r["value"][1])
            for r in result}


def same(a, b, rel_tol=0.0):
    return a == b or (math.isnan(a) and math.isnan(b)) or (rel_tol > 0 and math.isclose(a, b, rel_tol=rel_tol))


def samples_of(receiver, selector, window="10m"):
    """The timestamps (ms) and values of every sample of one series within the window, oldest first."""
    result = receiver.query(f"{selector}[{window}]")
    if len(result) != 1:
        return []
    return [(round(float(t) * 1000), float(v)) for t, v in result[0]["values"]]


def start_agent(receiver_url, state_dir, protocol="1.0"):
    return harness.Agent(AGENT, SIM, SCENARIO, env=FROZEN,
                         extra_args=push_args(receiver_url + "/api/v1/write", state_dir, protocol))


class EveryFamilyMatches:
    REL_TOL = 0.0  # exact
    SPEAKS_2_0 = False

    def check_every_family(self, receiver, protocol="1.0"):
        agent = start_agent(receiver.url, self.state_dir, protocol)
        try:
            harness.wait_for(lambda: len(receiver.query("DCGM_FI_PROF_SM_ACTIVE")) == 8, 30,
                             "eight GPUs pushed")
            # Values that change between two reads of /metrics (the agent's own counters and durations)
            # are compared on their series only; every other family must hold exactly its value.
            first = exposition_by_family(agent.metrics())
            time.sleep(2.5)  # two more batches
            second = exposition_by_family(agent.metrics())
            stable = {name for name in second
                      if name in first and first[name].keys() == second[name].keys() and
                      all(same(first[name][k], second[name][k]) for k in second[name])}
            self.assertGreater(len(stable), 40, "the simulator's families are stable at frozen time")
            mismatches = []
            for name, expected in sorted(second.items()):
                got = result_by_labels(receiver.query(f'{{__name__="{name}"}}'))
                if name in stable:
                    if got.keys() != expected.keys() or not all(same(got[k], expected[k], self.REL_TOL) for k in expected):
                        mismatches.append((name, expected, got))
                elif not set(expected) <= set(got) | set(first.get(name, {})):
                    mismatches.append((name, "series", sorted(set(expected) - set(got))))
            self.assertEqual(mismatches, [])
            fell_back = "remote_write receiver does not take 2.0, using 1.0" in agent.read_log()
            if protocol == "auto" and not self.SPEAKS_2_0:
                self.assertTrue(fell_back)
                samples = samples_of(receiver, 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}')
                self.assertGreaterEqual(len(samples), 3, "batches keep arriving after the fallback")
            if self.SPEAKS_2_0:
                self.assertFalse(fell_back, "a 2.0 receiver confirms what it wrote")
        finally:
            agent.stop()
            agent.cleanup()


class PushToPrometheus(unittest.TestCase, EveryFamilyMatches):
    def setUp(self):
        self.prometheus = harness.Prometheus([], config=NO_SCRAPE, extra_args=RECEIVER_ARGS)
        self.state_dir = self.prometheus.workdir + "/agent-state"

    def tearDown(self):
        self.prometheus.stop()

    def test_promql_on_prometheus_returns_what_metrics_shows_for_every_family(self):
        self.check_every_family(self.prometheus)

    def test_auto_falls_back_to_1_0_on_a_1_0_receiver_and_loses_nothing(self):
        # Prometheus 2.42 reads a 2.0 body as an empty 1.0 request and answers 204 without the
        # X-Prometheus-Remote-Write-*-Written headers: the sink resends that batch as 1.0.
        self.check_every_family(self.prometheus, protocol="auto")


PROMETHEUS3 = os.environ.get("GPUSCOPE_PROMETHEUS3", "")  # a Prometheus 3 binary (the peers build)


@unittest.skipUnless(PROMETHEUS3 and os.access(PROMETHEUS3, os.X_OK),
                     "GPUSCOPE_PROMETHEUS3 names no Prometheus 3 binary (built by the peers scripts)")
class PushToPrometheus3(unittest.TestCase, EveryFamilyMatches):
    """1.0, 2.0 and auto (which must stay on 2.0) against a receiver that speaks both."""

    SPEAKS_2_0 = True

    def setUp(self):
        # Prometheus 3 accepts both protobuf messages by default
        # (--web.remote-write-receiver.accepted-protobuf-messages).
        self.prometheus = harness.Prometheus([], binary=PROMETHEUS3, config=NO_SCRAPE, extra_args=RECEIVER_ARGS)
        self.state_dir = self.prometheus.workdir + "/agent-state"

    def tearDown(self):
        self.prometheus.stop()

    def test_1_0_every_family_matches(self):
        self.check_every_family(self.prometheus, protocol="1.0")

    def test_2_0_every_family_matches(self):
        self.check_every_family(self.prometheus, protocol="2.0")

    def test_auto_stays_on_2_0_and_every_family_matches(self):
        self.check_every_family(self.prometheus, protocol="auto")


class PushToVictoriaMetrics(unittest.TestCase, EveryFamilyMatches):
    # VictoriaMetrics stores a float as a decimal mantissa of 12 significant digits (its compression; e.g.
    # 0.4812379323650438 reads back as 0.481237932365), so exact means equal to that precision here.
    REL_TOL = 1e-11

    def setUp(self):
        # GPUSCOPE_VICTORIAMETRICS: another victoria-metrics binary (the peers build) instead of Debian's.
        self.vm = harness.VictoriaMetrics(binary=os.environ.get("GPUSCOPE_VICTORIAMETRICS") or None)
        self.state_dir = self.vm.workdir + "/agent-state"

    def tearDown(self):
        self.vm.stop()

    def test_promql_on_victoriametrics_returns_what_metrics_shows_for_every_family(self):
        self.check_every_family(self.vm)


class GpuFallsOffTheBus(unittest.TestCase):
    """GPU 3 falls off the bus 3 s into the run: its series leave the snapshot, and the next batch carries a
    stale marker for each, so Prometheus drops them at once instead of after its 5-minute lookback."""

    def test_a_lost_gpus_series_go_stale_in_prometheus_at_once(self):
        scenario = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        scenario.write("seed: 11\ngpus:\n  count: 8\n  model: h100-sxm\n"
                       "  workload: {type: training, memory_gib: 60, processes: 1, step_s: 1}\n"
                       "faults:\n  - {type: fall_off_bus, gpu: 3, at: 3}\n")
        scenario.close()
        prometheus = harness.Prometheus([], config=NO_SCRAPE, extra_args=RECEIVER_ARGS)
        agent = harness.Agent(AGENT, SIM, scenario.name,
                              extra_args=push_args(prometheus.url + "/api/v1/write",
                                                   os.path.join(prometheus.workdir, "agent-state")))
        try:
            harness.wait_for(lambda: prometheus.query('DCGM_FI_DEV_GPU_TEMP{gpu="3"}'), 30, "GPU 3 pushed")
            harness.wait_for(lambda: prometheus.query('gpuscope_gpu_up{gpu="3"} == 0'), 30, "GPU 3 down")
            harness.wait_for(lambda: not prometheus.query('DCGM_FI_DEV_GPU_TEMP{gpu="3"}'), 10,
                             "GPU 3's temperature gone from an instant query")
            self.assertEqual(len(prometheus.query("DCGM_FI_DEV_GPU_TEMP")), 7)
            # The series ended with the stale marker: its last sample in range is the NaN Prometheus hides.
            self.assertTrue(prometheus.query('count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu="3"}[1m])'))
            # The sink's own counter, published by the events collector every 5 s.
            harness.wait_for(lambda: sum(exposition_by_family(agent.metrics()).get(
                "gpuscope_remote_write_stale_markers_total", {}).values()) > 0, 15, "stale markers counted")
        finally:
            agent.stop()
            agent.cleanup()
            prometheus.stop()
            os.unlink(scenario.name)


class ReceiverOutage(unittest.TestCase):
    """The receiver is down while the agent runs, then comes up on the same port: every batch arrives,
    in order (Prometheus refuses out-of-order samples, which would show as drops), none is dropped."""

    def test_everything_queued_during_an_outage_arrives_in_order_afterwards(self):
        port = harness.free_port()
        url = f"http://127.0.0.1:{port}"
        state_dir = os.path.join(tempfile.mkdtemp(prefix="gpuscope-rw-"), "state")
        agent = start_agent(url, state_dir)
        prometheus = None
        try:
            time.sleep(6)  # six batches queue up; the sender retries with backoff
            down = exposition_by_family(agent.metrics())
            self.assertGreater(sum(down["gpuscope_remote_write_samples_retried_total"].values()), 0)
            prometheus = harness.Prometheus([], config=NO_SCRAPE, extra_args=RECEIVER_ARGS, port=port)
            harness.wait_for(lambda: self.drained(agent), 40, "the queue to drain")
            up = exposition_by_family(agent.metrics())
            queued = sum(up["gpuscope_remote_write_batches_queued_total"].values())
            self.assertGreaterEqual(queued, 6)
            self.assertEqual(sum(up["gpuscope_remote_write_samples_dropped_total"].values()), 0)
            samples = samples_of(prometheus, 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}')
            timestamps = [t for t, _ in samples]
            # Every batch queued so far holds this series once; later ones may have arrived meanwhile.
            self.assertGreaterEqual(len(timestamps), queued)
            self.assertEqual(timestamps, sorted(set(timestamps)))
            self.assertLess(timestamps[0], (time.time() - 6) * 1000, "the oldest, outage-time batch arrived")
        finally:
            agent.stop()
            agent.cleanup()
            if prometheus:
                prometheus.stop()

    @staticmethod
    def drained(agent):
        families = exposition_by_family(agent.metrics())
        pending = families.get("gpuscope_remote_write_pending_batches", {})
        sent = sum(families.get("gpuscope_remote_write_samples_sent_total", {}).values())
        return pending and sum(pending.values()) == 0 and sent > 0


class KillDuringPush(unittest.TestCase):
    """kill -9 of the agent five times while it pushes: every batch any incarnation queued arrives
    (at least once; Prometheus takes a resent identical sample as a no-op)."""

    KILLS = 5

    def test_kill_9_while_pushing_loses_no_batch(self):
        prometheus = harness.Prometheus([], config=NO_SCRAPE, extra_args=RECEIVER_ARGS)
        state_dir = os.path.join(prometheus.workdir, "agent-state")
        queued_before_kill = 0
        try:
            for _ in range(self.KILLS):
                agent = start_agent(prometheus.url, state_dir)
                harness.wait_for(lambda: sum(exposition_by_family(agent.metrics()).get(
                    "gpuscope_remote_write_batches_queued_total", {}).values()) >= 2, 20, "two batches queued")
                families = exposition_by_family(agent.metrics())
                queued_before_kill += sum(families["gpuscope_remote_write_batches_queued_total"].values())
                agent.process.send_signal(signal.SIGKILL)
                agent.process.wait()
                agent.log.close()
                agent.cleanup()
            # A last incarnation drains what the killed ones left.
            agent = start_agent(prometheus.url, state_dir)
            try:
                harness.wait_for(lambda: ReceiverOutage.drained(agent), 40, "the queue to drain")
                final = exposition_by_family(agent.metrics())
                queued_now = sum(final["gpuscope_remote_write_batches_queued_total"].values())
            finally:
                agent.stop()
                agent.cleanup()
            timestamps = [t for t, _ in samples_of(prometheus, 'DCGM_FI_DEV_GPU_TEMP{gpu="3"}')]
            self.assertEqual(timestamps, sorted(set(timestamps)))
            # Each killed incarnation may have queued one more batch after it was read.
            self.assertGreaterEqual(len(timestamps), queued_before_kill + queued_now)
            self.assertLessEqual(len(timestamps), queued_before_kill + queued_now + self.KILLS + 3)
        finally:
            prometheus.stop()


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[4:])

"""Integration: gpuscope-agent on the NVML simulator pushes its metrics by remote_write 1.0 to real
receivers on loopback (Debian's Prometheus 2.42 with --web.enable-remote-write-receiver, Debian's
VictoriaMetrics 1.79): at frozen simulated time PromQL returns exactly what /metrics shows, for every
family; a receiver that is down for a while gets everything afterwards, in order; kill -9 of the agent
while it pushes loses no sample.

Usage: remote_write_test.py AGENT SIM_LIBRARY SCENARIO_DIR [TestClass ...]"""

import json
import math
import os
import shutil
import signal
import subprocess
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


def exposition_by_family(text):
    """{family: {frozenset(labels incl. the external label): value}} from /metrics."""
    return {name: {labels | {EXTERNAL}: value for labels, value in series.items()}
            for name, series in harness.exposition_families(text).items()}


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


def start_agent_to(urls, state_dir, scenario=SCENARIO):
    """The agent pushing to several URLs at once (one queue reader each)."""
    args = push_args(urls[0], state_dir)
    for url in urls[1:]:
        args += ["--sink.remote-write.url", url]
    return harness.Agent(AGENT, SIM, scenario, env=FROZEN, extra_args=args)


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
VICTORIAMETRICS = os.environ.get("GPUSCOPE_VICTORIAMETRICS", "")  # VictoriaMetrics 1.151 (the peers build)
needs_prometheus3 = unittest.skipUnless(
    PROMETHEUS3 and os.access(PROMETHEUS3, os.X_OK),
    "GPUSCOPE_PROMETHEUS3 names no Prometheus 3 binary (built by the peers scripts)")
needs_victoriametrics = unittest.skipUnless(
    VICTORIAMETRICS and os.access(VICTORIAMETRICS, os.X_OK),
    "GPUSCOPE_VICTORIAMETRICS names no VictoriaMetrics binary (built by the peers scripts)")


@needs_prometheus3
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
            shutil.rmtree(os.path.dirname(state_dir), ignore_errors=True)

    @staticmethod
    def drained(agent, urls=1):
        families = exposition_by_family(agent.metrics())
        pending = families.get("gpuscope_remote_write_pending_batches", {})
        sent = families.get("gpuscope_remote_write_samples_sent_total", {})
        return (len(pending) == urls and sum(pending.values()) == 0 and len(sent) == urls and
                all(v > 0 for v in sent.values()))


class SeriesGoneAcrossARestart(unittest.TestCase):
    """The agent stops with 8 GPUs and starts again with 4 (the others were lost while it was down): the
    sink remembers the series of its last batch in its queue directory, so its first batch after the
    restart carries stale markers for GPUs 4-7 and Prometheus drops them at once instead of showing them
    for its 5-minute lookback."""

    def test_series_that_vanished_while_the_agent_was_down_go_stale_at_the_first_batch_after_restart(self):
        scenario = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        scenario.write("seed: 11\ngpus:\n  count: 4\n  model: h100-sxm\n"
                       "  workload: {type: training, memory_gib: 60, processes: 1, step_s: 1}\n")
        scenario.close()
        prometheus = harness.Prometheus([], config=NO_SCRAPE, extra_args=RECEIVER_ARGS)
        state_dir = os.path.join(prometheus.workdir, "agent-state")
        try:
            agent = start_agent(prometheus.url, state_dir)
            try:
                harness.wait_for(lambda: len(prometheus.query("DCGM_FI_DEV_GPU_TEMP")) == 8, 30, "eight GPUs pushed")
            finally:
                agent.stop()
                agent.cleanup()
            self.assertTrue(os.path.exists(os.path.join(state_dir, "queue", "remote_write", "series")))
            stopped = time.time()
            agent = harness.Agent(AGENT, SIM, scenario.name, env=FROZEN,
                                  extra_args=push_args(prometheus.url + "/api/v1/write", state_dir))
            try:
                harness.wait_for(lambda: len(prometheus.query("DCGM_FI_DEV_GPU_TEMP")) == 4, 30,
                                 "GPUs 4-7 gone from an instant query")
                self.assertLess(time.time() - stopped, 60, "gone at once, not after the 5-minute lookback")
                self.assertEqual(sorted(r["metric"]["gpu"] for r in prometheus.query("DCGM_FI_DEV_GPU_TEMP")),
                                 ["0", "1", "2", "3"])
                # They ended with a stale marker, not a gap: their samples are still there in range.
                self.assertEqual(len(prometheus.query('count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu="7"}[5m])')), 1)
                harness.wait_for(lambda: (harness.metric(agent, "gpuscope_remote_write_stale_markers_total") or 0) > 0,
                                 15, "the stale markers counted")
            finally:
                agent.stop()
                agent.cleanup()
        finally:
            prometheus.stop()
            os.unlink(scenario.name)


OUTAGE_SECONDS = int(os.environ.get("GPUSCOPE_RW_OUTAGE_SECONDS", "600"))


class LongOutage:
    """The receiver is down for ten minutes of real time (GPUSCOPE_RW_OUTAGE_SECONDS) while the agent
    queues a batch every second (within a disk bound of 1 GiB), then comes up on the same port: every batch
    arrives, each series in order and without a hole, nothing is dropped; the drain time and the queue's
    size are printed (and recorded in bench/results/remote_write_outages.md)."""

    def start_receiver(self, port):
        raise NotImplementedError

    def samples(self, receiver, selector):
        raise NotImplementedError

    def test_ten_minutes_down_then_everything_arrives_in_order_and_nothing_is_dropped(self):
        port = harness.free_port()
        state_dir = os.path.join(tempfile.mkdtemp(prefix="gpuscope-rw-long-"), "state")
        # A batch a second (15 times the default rate) of about 1,870 series is some 0.56 MiB of queue a
        # second: ten minutes need more than the default bound of 256 MiB.
        agent = harness.Agent(AGENT, SIM, SCENARIO, env=FROZEN,
                              extra_args=push_args(f"http://127.0.0.1:{port}/api/v1/write", state_dir) +
                              ["--sink.queue.max-mib", "1024"])
        receiver = None
        try:
            down_at = time.time()
            time.sleep(OUTAGE_SECONDS)
            down = exposition_by_family(agent.metrics())
            queued = sum(down["gpuscope_remote_write_batches_queued_total"].values())
            queue_bytes = sum(v for k, v in down["gpuscope_queue_bytes"].items() if ("queue", "remote_write") in k)
            pending_samples = sum(down["gpuscope_remote_write_samples_pending"].values())
            self.assertGreaterEqual(queued, OUTAGE_SECONDS * 0.9)
            up_at = time.monotonic()
            receiver = self.start_receiver(port)
            # The sender first sleeps out the backoff it reached while the receiver was down (at most
            # --sink's max backoff, 30 s), then sends the backlog.
            harness.wait_for(lambda: harness.metric(agent, "gpuscope_remote_write_samples_sent_total"), 60,
                             "the first delivery")
            first_seconds = time.monotonic() - up_at
            harness.wait_for(lambda: ReceiverOutage.drained(agent), OUTAGE_SECONDS, "the queue to drain")
            drain_seconds = time.monotonic() - up_at
            up = exposition_by_family(agent.metrics())
            print(f"{type(self).__name__}: {OUTAGE_SECONDS} s down, {queued:.0f} batches, "
                  f"{pending_samples:.0f} samples pending, queue {queue_bytes / 2**20:.1f} MiB; first delivery "
                  f"{first_seconds:.1f} s after the receiver was up, drained {drain_seconds:.1f} s after",
                  file=sys.stderr)
            self.assertEqual(sum(up["gpuscope_remote_write_samples_dropped_total"].values()), 0)
            self.assertEqual(sum(v for k, v in up["gpuscope_queue_dropped_total"].items()
                                 if ("queue", "remote_write") in k), 0)
            for gpu in range(8):
                times = [t for t, _ in self.samples(receiver, f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}"}}')]
                self.assertEqual(times, sorted(set(times)), f"GPU {gpu} in order, each sample once")
                self.assertLess(times[0], down_at * 1000 + 3000, "the first outage-time batch arrived")
                self.assertGreaterEqual(len(times), queued, f"GPU {gpu}: every batch queued while down")
                gaps = [b - a for a, b in zip(times, times[1:])]
                self.assertLess(max(gaps), 2000, f"GPU {gpu}: no hole in the 1 s batches")
        finally:
            agent.stop()
            agent.cleanup()
            if receiver:
                receiver.stop()
            shutil.rmtree(os.path.dirname(state_dir), ignore_errors=True)


@needs_prometheus3
class LongOutagePrometheus3(unittest.TestCase, LongOutage):
    def start_receiver(self, port):
        return harness.Prometheus([], binary=PROMETHEUS3, config=NO_SCRAPE, extra_args=RECEIVER_ARGS, port=port)

    def samples(self, receiver, selector):
        return samples_of(receiver, selector, window=f"{OUTAGE_SECONDS * 2 + 600}s")


@needs_victoriametrics
class LongOutageVictoriaMetrics(unittest.TestCase, LongOutage):
    def start_receiver(self, port):
        return harness.VictoriaMetrics(binary=VICTORIAMETRICS, port=port)

    def samples(self, receiver, selector):
        [(_, samples)] = receiver.export(selector)
        return samples


REPLAY = os.environ.get("GPUSCOPE_RW_OUTAGE_REPLAY", "")  # tests/tools/remote_write_outage
SIX_HOURS = 1440  # batches of 15 s
STEP_MS = 15000


def replay(phase, url, queue_dir, queue_max_mib, families, start_ms=0):
    """One phase of gpuscope-rw-outage-replay; its JSON report."""
    args = [REPLAY, "--phase", phase, "--url", url, "--queue-dir", queue_dir, "--queue-max-mib",
            str(queue_max_mib), "--batches", str(SIX_HOURS), "--interval-ms", str(STEP_MS),
            "--start-ms", str(start_ms), "--families", str(families)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed: {done.stderr}")
    return json.loads(done.stdout)


@unittest.skipUnless(REPLAY and os.access(REPLAY, os.X_OK), "GPUSCOPE_RW_OUTAGE_REPLAY names no replay tool")
class SimulatedSixHourOutage(unittest.TestCase):
    """A 6-hour receiver outage in simulated time: the product's RemoteWriteSink, driven by
    gpuscope-rw-outage-replay with a synthetic clock, queues 1,440 batches of 15 s (8 GPUs x FAMILIES
    families) while nothing listens, and drains them into a real receiver that comes up afterwards. The
    batches end now, so they are 6 hours old to 15 s old, as after a real outage."""

    FAMILIES = int(os.environ.get("GPUSCOPE_RW_REPLAY_FAMILIES", "40"))  # 320 series; 250 is 2,000
    SMALL_MIB = int(os.environ.get("GPUSCOPE_RW_REPLAY_SMALL_MIB", "16"))  # 256: the default bound

    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-rw-6h-")
        self.port = harness.free_port()
        self.url = f"http://127.0.0.1:{self.port}/api/v1/write"
        self.start_ms = (int(time.time()) // 15 * 15 - SIX_HOURS * 15) * 1000
        self.series = 8 * self.FAMILIES

    def tearDown(self):
        shutil.rmtree(self.workdir, ignore_errors=True)

    def outage(self, queue_max_mib, start_receiver):
        queue_dir = os.path.join(self.workdir, "queue")
        queued = replay("queue", self.url, queue_dir, queue_max_mib, self.FAMILIES, self.start_ms)
        self.assertEqual(queued["batches_queued"], SIX_HOURS)
        self.assertEqual(queued["samples_queued"], SIX_HOURS * self.series)
        receiver = start_receiver()
        try:
            drained = replay("drain", self.url, queue_dir, queue_max_mib, self.FAMILIES)
        except BaseException:
            receiver.stop()
            raise
        print(f"{self._testMethodName}: queue {queued['queue_bytes'] / 2**20:.1f} MiB after "
              f"{queued['seconds']:.1f} s, {queued['batches_dropped_full']:.0f} batches dropped (full); "
              f"{drained['samples_pending_at_start']:.0f} samples pending at the restart, drained in "
              f"{drained['seconds']:.1f} s", file=sys.stderr)
        # What the restarted sink found in the queue is what the first run left there.
        self.assertEqual(drained["samples_pending_at_start"], queued["samples_pending"])
        self.assertEqual(drained["batches_pending"], 0)
        return queued, drained, receiver

    def assert_every_series_has(self, stored, first_batch):
        """stored: {series: [(t ms, value)]}: each of the node's series holds exactly batches
        first_batch..1439, in order, each once, with its batch's value."""
        expected = [(self.start_ms + k * STEP_MS, float(k)) for k in range(first_batch, SIX_HOURS)]
        self.assertEqual(len(stored), self.series)
        wrong = [name for name, samples in stored.items() if samples != expected]
        self.assertEqual(wrong, [], "series missing batches, out of order or with the wrong values")

    def vm_samples(self, vm):
        out = {}
        for labels, samples in vm.export('{__name__=~"DCGM_FI_REPLAY_FIELD_.*"}', start=self.start_ms // 1000 - 60):
            out[(labels["__name__"], labels["gpu"])] = [(t, float(v)) for t, v in samples]
        return out

    def test_with_disk_enough_every_sample_arrives_in_order_in_victoriametrics(self):
        vm_binary = VICTORIAMETRICS or None
        queued, drained, vm = self.outage(1024, lambda: harness.VictoriaMetrics(binary=vm_binary, port=self.port))
        try:
            self.assertEqual(queued["batches_dropped_full"], 0)
            self.assertEqual(drained["samples_sent"], SIX_HOURS * self.series)
            self.assert_every_series_has(self.vm_samples(vm), 0)
        finally:
            vm.stop()

    @needs_prometheus3
    def test_with_disk_enough_every_sample_arrives_in_order_in_a_fresh_prometheus_3(self):
        # A Prometheus that ingests nothing else: its head starts at the oldest batch, so 6-hour-old
        # samples are in bounds and every later one is newer (Prometheus refuses out-of-order ones).
        queued, drained, prometheus = self.outage(1024, lambda: harness.Prometheus(
            [], binary=PROMETHEUS3, config=NO_SCRAPE, extra_args=RECEIVER_ARGS, port=self.port))
        try:
            self.assertEqual(drained["samples_sent"], SIX_HOURS * self.series)
            end = (self.start_ms + (SIX_HOURS - 1) * STEP_MS) / 1000
            stored = {}
            for r in prometheus.query('{__name__=~"DCGM_FI_REPLAY_FIELD_.*"}[7h]', at=end):
                stored[(r["metric"]["__name__"], r["metric"]["gpu"])] = [
                    (round(float(t) * 1000), float(v)) for t, v in r["values"]]
            self.assert_every_series_has(stored, 0)
        finally:
            prometheus.stop()

    def test_with_a_small_disk_bound_the_oldest_are_dropped_and_exactly_those_are_counted(self):
        vm_binary = VICTORIAMETRICS or None
        queued, drained, vm = self.outage(self.SMALL_MIB,
                                          lambda: harness.VictoriaMetrics(binary=vm_binary, port=self.port))
        try:
            dropped_batches = int(queued["batches_dropped_full"])
            self.assertGreater(dropped_batches, 0)
            self.assertLessEqual(queued["queue_bytes"], self.SMALL_MIB << 20)
            stored = self.vm_samples(vm)
            arrived = sum(len(samples) for samples in stored.values())
            # dropped = queued - arrived, to the sample, and the dropped ones are the oldest.
            self.assertEqual(SIX_HOURS * self.series - arrived, dropped_batches * self.series)
            self.assertEqual(drained["samples_sent"], arrived)
            self.assert_every_series_has(stored, dropped_batches)
        finally:
            vm.stop()

    @needs_prometheus3
    def test_a_prometheus_whose_head_is_current_refuses_samples_older_than_its_head_and_the_sink_counts_them(self):
        # The usual case after a long outage: the receiver kept ingesting (here: it scrapes itself), so its
        # head ends at the present and a sample more than an hour older (half the head's 2-hour block) is
        # out of bounds. Prometheus answers such a request 400, and the sink drops it with a counter rather
        # than retry it forever.
        queued, drained, arrived = self.drain_into_a_prometheus_with_a_current_head("")
        print(f"{self._testMethodName}: of {SIX_HOURS} batches Prometheus 3 kept {arrived} (the newest); "
                  f"the sink counted {drained['samples_rejected']:.0f} samples rejected", file=sys.stderr)
        self.assertEqual(queued["batches_dropped_full"], 0)
        self.assertLess(arrived, SIX_HOURS, "out-of-bounds samples are refused")
        self.assertGreater(drained["samples_rejected"], 0)
        # Everything the sink sent is either stored or counted as rejected; nothing in between.
        self.assertEqual(drained["samples_sent"] + drained["samples_rejected"], SIX_HOURS * self.series)
        self.assertEqual(drained["samples_sent"], arrived * self.series)

    @needs_prometheus3
    def test_a_prometheus_with_an_out_of_order_window_longer_than_the_outage_takes_every_sample(self):
        # What the README advises for a Prometheus receiver: storage.tsdb.out_of_order_time_window.
        queued, drained, arrived = self.drain_into_a_prometheus_with_a_current_head(
            "storage: {tsdb: {out_of_order_time_window: 7h}}\n")
        self.assertEqual(arrived, SIX_HOURS)
        self.assertEqual(drained["samples_rejected"], 0)
        self.assertEqual(drained["samples_sent"], SIX_HOURS * self.series)

    def drain_into_a_prometheus_with_a_current_head(self, extra_config):
        """The 6-hour backlog into a Prometheus 3 that scrapes itself (its head is at the present): the
        replay's reports and how many batches of one series it stored."""
        config = ("global: {scrape_interval: 1s}\n" + extra_config +
                  f"scrape_configs: [{{job_name: self, static_configs: [{{targets: ['127.0.0.1:{self.port}']}}]}}]\n")
        queue_dir = os.path.join(self.workdir, "queue")
        queued = replay("queue", self.url, queue_dir, 1024, self.FAMILIES, self.start_ms)
        prometheus = harness.Prometheus([], binary=PROMETHEUS3, config=config, extra_args=RECEIVER_ARGS,
                                        port=self.port)
        try:
            harness.wait_for(lambda: prometheus.query("up"), 30, "Prometheus to scrape itself")
            drained = replay("drain", self.url, queue_dir, 1024, self.FAMILIES)
            end = (self.start_ms + (SIX_HOURS - 1) * STEP_MS) / 1000
            kept = prometheus.query('count_over_time(DCGM_FI_REPLAY_FIELD_0{gpu="0"}[7h])', at=end)
            return queued, drained, int(float(kept[0]["value"][1])) if kept else 0
        finally:
            prometheus.stop()


class KillDuringPush(unittest.TestCase):
    """kill -9 of the agent 20 times (the issue's number) while it pushes to Debian's Prometheus and to
    VictoriaMetrics 1.151 at once (one queue reader each): every batch any incarnation queued arrives
    (Prometheus refuses out-of-order samples, so order holds too), and what arrives twice is only the
    last batch a killed incarnation had sent but not yet acknowledged: VictoriaMetrics stores every sample
    it is sent, duplicates included, so its export shows each resent sample."""

    KILLS = 20
    MAX_BATCH_RECORDS = 10  # one request holds at most ten queued batches (RemoteWriteSink's sender)

    @needs_victoriametrics
    def test_kill_9_while_pushing_loses_no_batch_and_resends_only_the_unacknowledged_one(self):
        prometheus = harness.Prometheus([], config=NO_SCRAPE, extra_args=RECEIVER_ARGS)
        vm = harness.VictoriaMetrics(binary=VICTORIAMETRICS)
        state_dir = os.path.join(prometheus.workdir, "agent-state")
        urls = [prometheus.url + "/api/v1/write", vm.url + "/api/v1/write"]
        queued_before_kill = 0
        cycle_seconds = []
        try:
            for _ in range(self.KILLS):
                began = time.monotonic()
                agent = start_agent_to(urls, state_dir)
                harness.wait_for(lambda: sum(exposition_by_family(agent.metrics()).get(
                    "gpuscope_remote_write_batches_queued_total", {}).values()) >= 2, 20, "two batches queued")
                families = exposition_by_family(agent.metrics())
                queued_before_kill += sum(families["gpuscope_remote_write_batches_queued_total"].values())
                agent.process.send_signal(signal.SIGKILL)
                agent.process.wait()
                agent.log.close()
                agent.cleanup()
                cycle_seconds.append(time.monotonic() - began)
            # A last incarnation drains what the killed ones left.
            agent = start_agent_to(urls, state_dir)
            try:
                harness.wait_for(lambda: ReceiverOutage.drained(agent, urls=2), 60, "the queue to drain")
                final = exposition_by_family(agent.metrics())
                queued_now = sum(final["gpuscope_remote_write_batches_queued_total"].values())
            finally:
                agent.stop()
                agent.cleanup()
            print(f"kill -9 cycles: {self.KILLS}, {min(cycle_seconds):.1f}-{max(cycle_seconds):.1f} s each, "
                  f"{sum(cycle_seconds):.0f} s in all", file=sys.stderr)
            selector = 'DCGM_FI_DEV_GPU_TEMP{gpu="3"}'
            timestamps = [t for t, _ in samples_of(prometheus, selector, window="30m")]
            self.assertEqual(timestamps, sorted(set(timestamps)))
            # Each killed incarnation may have queued one more batch after it was read.
            self.assertGreaterEqual(len(timestamps), queued_before_kill + queued_now)
            self.assertLessEqual(len(timestamps), queued_before_kill + queued_now + self.KILLS + 3)
            # VictoriaMetrics: the same batches, none lost; a timestamp stored twice is a resent batch.
            [(_, stored)] = vm.export(selector)
            stored_times = [t for t, _ in stored]
            # Both hold the same batches (the newest may have reached one only as the agent was stopped).
            cut = min(max(stored_times), timestamps[-1])
            self.assertEqual(sorted({t for t in stored_times if t <= cut}), [t for t in timestamps if t <= cut],
                             "both receivers hold the same batches")
            self.assertGreaterEqual(len({t for t in stored_times if t <= cut}), queued_before_kill)
            counts = {}
            for t in stored_times:
                counts[t] = counts.get(t, 0) + 1
            self.assertLessEqual(max(counts.values()), 2, "a batch is resent at most once")
            # The resent batches form at most one run per kill (the request in flight when it came), each of
            # at most one request's batches.
            runs = []
            for i, t in enumerate(timestamps):
                if counts[t] == 2:
                    if runs and runs[-1][-1] == i - 1:
                        runs[-1].append(i)
                    else:
                        runs.append([i])
            print(f"resent after kill -9: {sum(len(r) for r in runs)} batches in {len(runs)} runs",
                  file=sys.stderr)
            self.assertLessEqual(len(runs), self.KILLS)
            self.assertTrue(all(len(r) <= self.MAX_BATCH_RECORDS for r in runs), runs)
        finally:
            prometheus.stop()
            vm.stop()


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[4:])

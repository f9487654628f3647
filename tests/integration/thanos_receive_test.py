"""Integration: gpuscope-fleet's simulated nodes push their metrics by remote_write into a real Thanos Receive
hashring (three receivers, replication factor 2) started from deploy/thanos/; one receiver is SIGKILLed
mid-run and brought back on the same ports and TSDB. Proves that queries keep answering through the outage
(every node's series and every sample stored before the kill still read back through thanos query), that the
store refused pushes and the nodes' queues absorbed them (failed requests rose, nothing dropped, the queues
grew and drained), that no sample was lost (a chosen series of every node holds one sample per batch the
node queued, including the outage), and that thanos rule evaluated the mixin's recording rules on the pushed
data and sent its alerts to Alertmanager.

Who pushes is start_pushers() alone; the rest of the test needs only each node's hostname and the URL of
its /metrics.

Usage: thanos_receive_test.py GPUSCOPE_FLEET SIM_LIBRARY SCENARIO_DIR THANOS [TestClass ...]"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402
import thanos  # noqa: E402

FLEET, SIM, SCENARIOS, THANOS = sys.argv[1:5]
PUSH_INTERVAL_S = 1
NODES = 3
KILLED = 1  # the receiver SIGKILLed: node 1 pushes to it directly, nodes 0 and 2 through the others
HEALTHY_S = 10
OUTAGE_S = 20
DBE_AT_S = 5  # node 0's GPU 5: a double-bit ECC error, which the mixin alerts on at once
# The series whose every sample is accounted for: each GPU's temperature on each node (24 series, which the
# hashring spreads over every pair of receivers).
CHOSEN = 'DCGM_FI_DEV_GPU_TEMP{{Hostname="{host}"}}'


class Pusher:
    """One pushing node: its hostname (the Hostname label of its GPU series), the URL of its /metrics, and
    stop(show_log=False), which stops it (printing its log's tail first when show_log)."""

    def __init__(self, hostname, metrics_url, stop):
        self.hostname = hostname
        self.metrics_url = metrics_url
        self.stop = stop


def start_pushers(remote_write_urls, workdir):
    """NODES simulated nodes of gpuscope-fleet (a healthy training node each; node 0's GPU 5 has a double-bit
    ECC error DBE_AT_S into the run), node i pushing to remote_write_urls[i % len] every PUSH_INTERVAL_S with
    deploy/thanos/agent-remote-write.yaml (its receiver URL substituted; the fleet gives each node its own
    instance label). One fleet process per receiver, as nodes spread over a ring's receivers: node 1 pushes
    straight to the receiver that is killed. Returns [Pusher]."""
    with open(os.path.join(thanos.DEPLOY, "agent-remote-write.yaml")) as f:
        reference = f.read()
    with open(os.path.join(SCENARIOS, "h100-training.yaml")) as f:
        healthy = f.read()
    if "\nfaults: []\n" not in healthy:
        raise AssertionError("h100-training.yaml no longer ends its faults with 'faults: []'")
    faulty = os.path.join(workdir, "h100-training-dbe.yaml")
    with open(faulty, "w") as f:
        f.write(healthy.replace("\nfaults: []\n", f"\nfaults:\n  - {{type: dbe, gpu: 5, at: {DBE_AT_S}}}\n"))
    url_placeholder = "http://thanos-receive.example:19291/api/v1/receive"
    if url_placeholder not in reference:
        raise AssertionError(f"agent-remote-write.yaml no longer has {url_placeholder!r}")
    # The reference's per-node instance label is what the fleet sets for each node itself.
    reference = re.sub(r",\s*instance=[^\],]*", "", reference)
    pushers = []
    for i in range(NODES):
        prefix = f"thanos-node-{i}-"
        config = os.path.join(workdir, f"node-{i}.yaml")
        with open(config, "w") as f:
            f.write(reference.replace(url_placeholder, remote_write_urls[i % len(remote_write_urls)]))
        description = os.path.join(workdir, f"fleet-{i}.yaml")
        with open(description, "w") as f:
            f.write(f"nodes: 1\nhostname_prefix: {prefix}\nseed: {i + 1}\n"
                    f"groups: [{{scenario: {faulty if i == 0 else os.path.join(SCENARIOS, 'h100-training.yaml')}}}]\n")
        runner = FleetProcess(description, config, os.path.join(workdir, f"fleet-{i}"))
        pushers.append(Pusher(f"{prefix}0001", f"http://{runner.targets[0]}/metrics", runner.stop))
    return pushers


class FleetProcess:
    """gpuscope-fleet with the description and agent config given, pushing every PUSH_INTERVAL_S; learns its
    nodes' addresses from its file_sd file. stop(show_log=False) ends it (its log's tail first when show_log)."""

    def __init__(self, description, config, workdir):
        os.makedirs(workdir, exist_ok=True)
        file_sd = os.path.join(workdir, "targets.json")
        self.log_path = os.path.join(workdir, "fleet.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [FLEET, "--fleet", description, "--file-sd", file_sd, "--state-dir", os.path.join(workdir, "state"),
             "--nvml.library", SIM, "--log.level", "warn", "--config", config,
             f"--collector.gpu.interval={PUSH_INTERVAL_S}s", f"--sink.remote-write.interval={PUSH_INTERVAL_S}s"],
            stdout=self.log, stderr=subprocess.STDOUT)

        def written():
            if self.process.poll() is not None:
                raise AssertionError(f"gpuscope-fleet exited with {self.process.returncode}: {self.read_log()}")
            return os.path.exists(file_sd)
        harness.wait_for(written, 60, "gpuscope-fleet's file_sd targets")
        with open(file_sd) as f:
            self.targets = [address for group in json.load(f) for address in group["targets"]]

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, show_log=False):
        if self.process.poll() is None:
            harness.terminate(self.process)
        if not self.log.closed:
            if show_log:
                print(f"--- gpuscope-fleet log ---\n{self.read_log()[-4000:]}", file=sys.stderr)
            self.log.close()


def self_metrics(pusher):
    """{name: sum over its series} of the pushing node's remote_write and queue self-metrics."""
    text = harness.http_get(pusher.metrics_url)[2].decode()
    out = {}
    for (name, labels), value in harness.parse_exposition(text).items():
        labels = dict(labels)
        if name == "gpuscope_queue_records" and labels.get("queue") != "remote_write":
            continue
        if name == "gpuscope_queue_appended_total" and labels.get("queue") != "remote_write":
            continue
        if name.startswith(("gpuscope_remote_write_", "gpuscope_queue_", "gpuscope_sink_")):
            out[name] = out.get(name, 0) + value
    return out


class ThanosReceiveKill(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-thanos-test-")
        self.alertmanager = fleet.Alertmanager(os.path.join(fleet.GENERATED, fleet.ALERTMANAGER_CONFIG),
                                               self.workdir)
        self.ring = thanos.ThanosRing(THANOS, self.alertmanager.url)
        self.pushers = []

    def tearDown(self):
        show = harness.failed(self)
        for pusher in self.pushers:
            pusher.stop(show_log=show)
        if show:
            print(self.ring.logs()[-20000:], file=sys.stderr)
        self.ring.cleanup()
        self.alertmanager.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def every_node_answers(self):
        """Every node's eight GPUs through thanos query (deduplicated, as a dashboard reads them)."""
        counts = {r["metric"]["Hostname"]: float(r["value"][1])
                  for r in self.ring.query("count by (Hostname) (DCGM_FI_DEV_GPU_TEMP)")}
        return counts == {p.hostname: 8.0 for p in self.pushers}

    def chosen_samples(self, pusher, start, end):
        """{gpu: [(timestamp ms, value), ...]} of the node's chosen series stored in (start, end]."""
        series = self.ring.raw_samples(CHOSEN.format(host=pusher.hostname), start, end)
        by_gpu = {dict(labels)["gpu"]: samples for labels, samples in series.items()}
        self.assertEqual(len(by_gpu), len(series), f"one chosen series per GPU: {list(series)}")
        return by_gpu

    def test_a_receiver_killed_mid_run_loses_no_sample_and_queries_keep_answering(self):
        started = time.time()
        self.pushers = start_pushers([r.remote_write_url for r in self.ring.receivers], self.workdir)
        harness.wait_for(self.every_node_answers, 60, "every node's GPUs through thanos query")
        time.sleep(HEALTHY_S)

        before = {p.hostname: self_metrics(p) for p in self.pushers}
        killed_at = time.time()
        # What each node had delivered (2xx) before the kill is stored on both of its receivers; a batch in
        # flight at the kill may yet land on one of them, so it is not part of the comparison.
        acked = {host: m["gpuscope_remote_write_highest_sent_timestamp_seconds"] for host, m in before.items()}
        stored_before = {p.hostname: self.chosen_samples(p, started, acked[p.hostname]) for p in self.pushers}
        for host, by_gpu in stored_before.items():
            self.assertEqual(sorted(by_gpu), [str(g) for g in range(8)], f"{host}'s GPUs before the kill")
            for gpu, samples in by_gpu.items():
                self.assertGreaterEqual(len(samples), HEALTHY_S // PUSH_INTERVAL_S // 2,
                                        f"{host}/{gpu} before the kill")
        # The receiver about to be killed holds a copy of some of them (the replica label names the holder).
        on_killed = [r["metric"] for r in self.ring.query("DCGM_FI_DEV_GPU_TEMP", dedup=False)
                     if r["metric"].get("receive_replica") == f"thanos-receive-{KILLED}"]
        self.assertTrue(on_killed, "the killed receiver holds chosen series")
        print(f"chosen series with a copy on the killed receiver: {len(on_killed)} of 24", file=sys.stderr)
        self.ring.kill_receiver(KILLED)

        # (a) Through the outage: every node's series, and every sample stored before the kill, still read
        # back (from the replica the other receivers hold).
        most_records = {p.hostname: 0 for p in self.pushers}
        checks = 0
        while time.time() < killed_at + OUTAGE_S:
            self.assertTrue(self.every_node_answers(), "every node's GPUs during the outage")
            for p in self.pushers:
                self.assertEqual(self.chosen_samples(p, started, acked[p.hostname]), stored_before[p.hostname],
                                 f"{p.hostname}'s samples from before the kill, during the outage")
                most_records[p.hostname] = max(most_records[p.hostname],
                                               self_metrics(p)["gpuscope_queue_records"])
            checks += 1
            time.sleep(1)
        self.assertGreaterEqual(checks, 5)
        during = {p.hostname: self_metrics(p) for p in self.pushers}

        self.ring.start_receiver(KILLED)
        restarted_at = time.time()

        # Every node catches up: it has delivered a batch queued after the restart and its queue is back to
        # what one interval holds.
        def caught_up(p):
            m = self_metrics(p)
            return (m["gpuscope_remote_write_highest_sent_timestamp_seconds"] > restarted_at
                    and m["gpuscope_queue_records"] <= 1)
        harness.wait_for(lambda: all(caught_up(p) for p in self.pushers), 90, "every node's queue drained")

        # (b) The store refused pushes during the outage and the queues held them: nothing dropped.
        retried = {}
        for p in self.pushers:
            m = self_metrics(p)
            host = p.hostname
            retried[host] = (m["gpuscope_remote_write_samples_retried_total"] -
                             before[host]["gpuscope_remote_write_samples_retried_total"])
            self.assertGreater(during[host]["gpuscope_sink_failed_requests_total"],
                               before[host]["gpuscope_sink_failed_requests_total"], f"{host}'s pushes failed")
            self.assertGreater(retried[host], 0, f"{host} retried samples")
            self.assertEqual(m.get("gpuscope_remote_write_samples_dropped_total", 0), 0, f"{host} dropped samples")
            self.assertEqual(m.get("gpuscope_sink_dropped_records_total", 0), 0, f"{host} dropped records")
            self.assertGreaterEqual(most_records[host], OUTAGE_S // PUSH_INTERVAL_S // 2,
                                    f"{host}'s queue grew during the outage")
        print(f"samples retried during the outage, per node: {retried}; most queued records: {most_records}",
              file=sys.stderr)

        # (c) No sample lost: each chosen series of every node holds one sample per batch the node queued
        # (each batch carries it), the outage included. The largest gap is printed, not asserted: it measures
        # the producer's timer on a loaded machine, not the store.
        for p in self.pushers:
            m = self_metrics(p)
            queued, newest = m["gpuscope_queue_appended_total"], m["gpuscope_remote_write_highest_timestamp_seconds"]
            harness.wait_for(lambda: self_metrics(p)["gpuscope_remote_write_highest_sent_timestamp_seconds"] >= newest,
                             30, f"{p.hostname}'s batch of {newest} delivered")
            by_gpu = self.chosen_samples(p, started - 60, newest)
            self.assertEqual(sorted(by_gpu), [str(g) for g in range(8)], f"{p.hostname}'s GPUs")
            for gpu, samples in sorted(by_gpu.items()):
                stamps = [t for t, _ in samples]
                what = f"{p.hostname} GPU {gpu}"
                self.assertEqual(len(samples), queued, f"{what}: one sample per batch queued")
                self.assertTrue(any(killed_at * 1000 < t < restarted_at * 1000 for t in stamps),
                                f"{what}: the outage's samples are stored")
            print(f"{p.hostname}: {len(samples)} samples per GPU for {queued:.0f} batches queued, largest gap "
                  f"{max(b - a for s in by_gpu.values() for (a, _), (b, _) in zip(s, s[1:]))} ms", file=sys.stderr)

        # (d) thanos rule evaluated the mixin's recording rules on the pushed data: the first rule's output,
        # per GPU of every node, through thanos query.
        def recorded():
            out = {}
            for r in self.ring.query("count by (Hostname) (gpuscope:gpu_utilisation:ratio)"):
                out[r["metric"].get("Hostname")] = float(r["value"][1])
            return out == {p.hostname: 8.0 for p in self.pushers}
        harness.wait_for(recorded, 60, "gpuscope:gpu_utilisation:ratio recorded by thanos rule for every GPU")

        # ... and its alerts, sent to Alertmanager: node 0's double-bit ECC error, on GPU 5 only.
        def dbe_alerts():
            return sorted((a["labels"].get("Hostname"), a["labels"].get("gpu"))
                          for a in self.alertmanager.alerts() if a["labels"]["alertname"] == "GpuEccDoubleBitError")
        harness.wait_for(lambda: dbe_alerts() == [(self.pushers[0].hostname, "5")], 60,
                         "GpuEccDoubleBitError for node 0's GPU 5 in Alertmanager, from thanos rule")
        print(f"wall time {time.time() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[5:])

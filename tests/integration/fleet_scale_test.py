"""Integration: 50 simulated GPU nodes (gpuscope-fleet, the mix of sim/fleets/mixed.yaml) scraped through
their file_sd targets by a real Prometheus (3 where $GPUSCOPE_PROMETHEUS names it) that evaluates the
mixin's committed recording and alerting rules (deploy/mixin/generated/prometheus), as a site loads them.
Proves that every target is up with its node's series, that the recording rules give every node and every
job its row, that the faulty nodes of the mix (h100-faults and the NVLink CRC incident) raise hardware
alerts and no other node does, and that no rule group misses an iteration or fails. Prints the figures
(series, samples/s, scrape duration, rule-group evaluation times).

The description is mixed.yaml with one change: the NVLink incident's scenario starts at its t=600 s (the
CRC errors under way), which a 90 s test could not otherwise reach; every other node runs mixed.yaml's.

Usage: fleet_scale_test.py FLEET"""

import calendar
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402

FLEET = sys.argv[1]
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MIXED = os.path.join(ROOT, "sim", "fleets", "mixed.yaml")
RULES = os.path.join(ROOT, "deploy", "mixin", "generated", "prometheus")
NODES = 50
INTERVAL_S = 5
FAULT_SCENARIOS = ("h100-faults.yaml", "h100-nvlink-crc-incident.yaml")


def dealt_groups(weights, nodes):
    """The group of each node as sim/fleet/fleet_description.h documents the dealing (each node to the
    group furthest behind its share; ties to the earlier group): the test's own oracle of which nodes
    run a faulty scenario."""
    total = sum(weights)
    dealt = [0] * len(weights)
    out = []
    for i in range(nodes):
        best, best_deficit = 0, -1e300
        for g, (w, d) in enumerate(zip(weights, dealt)):
            if w / total * (i + 1) - d > best_deficit + 1e-9:
                best, best_deficit = g, w / total * (i + 1) - d
        dealt[best] += 1
        out.append(best)
    return out


def hostname(i):
    return f"fleet-node-{i + 1:04d}"


class FleetScaleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="gpuscope-fleet-scale-")
        with open(MIXED) as f:
            text = f.read()
        groups = re.findall(r"\{scenario: \.\./scenarios/([\w.-]+), weight: (\d+)\}", text)
        assert groups, "no groups found in mixed.yaml"
        incident = os.path.join(cls.work, "h100-nvlink-crc-incident.yaml")
        with open(os.path.join(ROOT, "sim", "scenarios", "h100-nvlink-crc-incident.yaml")) as f:
            scenario = f.read()
        with open(incident, "w") as f:
            f.write("start_offset: 600\n" + scenario)
        text = text.replace("../scenarios/h100-nvlink-crc-incident.yaml", incident)
        text = text.replace("../scenarios/", os.path.join(ROOT, "sim", "scenarios") + "/")
        description = os.path.join(cls.work, "fleet.yaml")
        with open(description, "w") as f:
            f.write(text)
        dealt = dealt_groups([int(w) for _, w in groups], NODES)
        cls.scenario_of = {hostname(i): groups[g][0] for i, g in enumerate(dealt)}
        cls.faulty = {h for h, s in cls.scenario_of.items() if s in FAULT_SCENARIOS}

        cls.file_sd = os.path.join(cls.work, "targets.json")
        cls.fleet_log = open(os.path.join(cls.work, "fleet.log"), "w")
        started = time.monotonic()
        cls.fleet = subprocess.Popen(
            [FLEET, "--fleet", description, "--nodes", str(NODES), "--file-sd", cls.file_sd,
             "--state-dir", os.path.join(cls.work, "state"), "--log.level", "warn",
             f"--collector.gpu.interval={INTERVAL_S}s"],
            stdout=cls.fleet_log, stderr=subprocess.STDOUT)
        cls.prometheus = None
        try:
            def file_sd_written():
                if cls.fleet.poll() is not None:
                    raise AssertionError(f"gpuscope-fleet exited with {cls.fleet.returncode}")
                return os.path.exists(cls.file_sd)

            harness.wait_for(file_sd_written, 60, "the fleet's file_sd file")
            cls.fleet_ready_s = time.monotonic() - started
            with open(cls.file_sd) as f:
                cls.targets = json.load(f)
            config = (f"global: {{scrape_interval: {INTERVAL_S}s, evaluation_interval: {INTERVAL_S}s}}\n"
                      "rule_files:\n"
                      f"  - {RULES}/recording_rules.yaml\n"
                      f"  - {RULES}/alerting_rules.yaml\n"
                      "scrape_configs:\n"
                      "  - job_name: gpuscope\n"
                      f"    file_sd_configs: [{{files: [{cls.file_sd}], refresh_interval: 5s}}]\n")
            cls.prometheus = harness.Prometheus((), config=config)
            harness.wait_for(lambda: cls.value(f'count(up{{job="gpuscope"}} == 1)') == NODES, 60,
                             "every target up")
            # Two evaluations of every recording group (30 s interval) after each node's first scrapes, so
            # that rate() and increase() have two samples.
            first = time.time()
            harness.wait_for(lambda: cls.evaluated_since(first + INTERVAL_S, 2), 120,
                             "two evaluations of every rule group")
        except BaseException:
            cls.tearDownClass(show_logs=True)
            raise

    @classmethod
    def tearDownClass(cls, show_logs=False):
        if cls.prometheus is not None:
            if show_logs:
                with open(os.path.join(cls.prometheus.workdir, "prometheus.log")) as f:
                    print(f"--- prometheus log ---\n{f.read()[-3000:]}", file=sys.stderr)
            cls.prometheus.stop()
            cls.prometheus = None
        harness.terminate(cls.fleet, timeout=60)
        cls.fleet_log.close()
        if show_logs or cls.fleet.returncode != 0:
            with open(os.path.join(cls.work, "fleet.log")) as f:
                print(f"--- fleet log (exit {cls.fleet.returncode}) ---\n{f.read()[-3000:]}", file=sys.stderr)
        shutil.rmtree(cls.work, ignore_errors=True)

    @classmethod
    def value(cls, promql):
        result = cls.prometheus.query(promql)
        return float(result[0]["value"][1]) if result else None

    @classmethod
    def rule_groups(cls):
        return json.loads(harness.http_get(cls.prometheus.url + "/api/v1/rules", timeout=30)[2])["data"]["groups"]

    @classmethod
    def evaluations(cls):
        """{group: number of evaluations so far} from Prometheus' own counters."""
        metrics = harness.http_get(cls.prometheus.url + "/metrics", timeout=30)[2].decode()
        out = {}
        for line in metrics.splitlines():
            match = re.match(r'prometheus_rule_group_iterations_total\{rule_group="[^"]*;([^"]+)"\} (\S+)', line)
            if match:
                out[match.group(1)] = float(match.group(2))
        return out

    @classmethod
    def evaluated_since(cls, since, times):
        """Whether every rule group has evaluated at least `times` times, the last one after `since`."""
        counts = cls.evaluations()
        for group in cls.rule_groups():
            stamp = group.get("lastEvaluation", "")
            if counts.get(group["name"], 0) < times or stamp.startswith("0001-"):
                return False
            seconds = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
            if seconds < since:
                return False
        return True

    def by(self, promql, label, at=None):
        """{label value: value} of an instant query (at `at`, Unix seconds, when given)."""
        return {r["metric"].get(label, ""): float(r["value"][1]) for r in self.prometheus.query(promql, at)}

    def test_every_target_is_up_with_its_node_label(self):
        self.assertEqual(len(self.targets), NODES)
        up = self.by('up{job="gpuscope"}', "node")
        self.assertEqual(up, {hostname(i): 1.0 for i in range(NODES)})
        # The GPU series name their node with Hostname; the target's node label agrees on every one.
        pairs = self.prometheus.query('count by (node, Hostname) (gpuscope_gpu_info{job="gpuscope"})')
        self.assertEqual(sorted((p["metric"]["node"], p["metric"]["Hostname"]) for p in pairs),
                         [(hostname(i), hostname(i)) for i in range(NODES)])

    def test_each_node_stores_the_series_it_exposes(self):
        # Scraped series only: not up and scrape_*, which Prometheus adds, nor the records of rules that
        # keep the job label (gpuscope:gpu_utilisation:ratio and others, named with colons).
        # Both at one instant, two intervals back: every scrape before it is committed, so a job that starts
        # or ends between the two queries cannot change one count and not the other.
        at = time.time() - 2 * INTERVAL_S
        stored = self.by('count by (node) ({job="gpuscope", __name__!~"up|scrape_.+|.+:.+"})', "node", at)
        scraped = self.by('scrape_samples_scraped{job="gpuscope"}', "node", at)
        self.assertEqual(set(stored), {hostname(i) for i in range(NODES)})
        # One node of each scenario read directly: its own /metrics has as many samples as Prometheus got.
        seen = {}
        for target in self.targets:
            node = target["labels"]["node"]
            scenario = self.scenario_of[node]
            if scenario in seen:
                continue

            def matches():
                body = harness.http_get(f"http://{target['targets'][0]}/metrics")[2].decode()
                exposed = len(harness.parse_exposition(body))
                now = self.by(f'scrape_samples_scraped{{job="gpuscope", node="{node}"}}', "node")[node]
                return exposed if exposed == now else None

            seen[scenario] = (node, harness.wait_for(matches, 3 * INTERVAL_S, f"{node}'s series to settle"))
        for node, count in stored.items():
            self.assertEqual(count, scraped[node], f"{node}: series stored vs samples scraped")
        print("\nseries per node, by scenario (node read directly):", file=sys.stderr)
        for scenario, (node, count) in sorted(seen.items()):
            print(f"  {scenario:34s} {node}: {count}", file=sys.stderr)
        self.assertGreater(min(c for _, c in seen.values()), 500)

    def test_recording_rules_have_a_row_for_every_node_and_job(self):
        every = {hostname(i) for i in range(NODES)}
        for rule in ("node:gpu_power_watts:sum", "node:gpu_energy_joules:increase_1h"):
            self.assertEqual(set(self.by(rule, "Hostname")), every, rule)
        self.assertEqual(self.value("count(count by (Hostname) (node:gpu_power_watts:sum))"), NODES)
        # Every job the agents report has its rows, with the GPUs it holds.
        gpus_per_job = self.by('count by (hpc_job) (gpuscope:gpu_utilisation:ratio{hpc_job!=""})', "hpc_job")
        self.assertGreater(len(gpus_per_job), 1)
        self.assertEqual(self.by("hpc_job:gpus_allocated:count", "hpc_job"), gpus_per_job)
        self.assertEqual(set(self.by("hpc_job:gpu_utilisation:avg", "hpc_job")), set(gpus_per_job))
        self.assertEqual(set(self.by("hpc_job:gpu_allocated_idle_hours:sum_1h", "hpc_job")), set(gpus_per_job))
        users = self.by('count by (user) (gpuscope_job_info{job="gpuscope"})', "user")
        self.assertEqual(set(self.by("user:gpu_utilisation:avg", "user")), set(users))
        self.assertEqual(sum(self.by("user:gpus_allocated:count", "user").values()), sum(gpus_per_job.values()))
        for rule in ("cluster:gpu_utilisation:avg", "cluster:gpu_allocated:ratio", "cluster:gpu_power_watts:sum",
                     "cluster:gpu_energy_joules:increase_1h", "cluster:gpu_allocation_efficiency:ratio"):
            self.assertIsNotNone(self.value(rule), rule)
        # The cluster's energy is the sum of its nodes'.
        self.assertAlmostEqual(self.value("cluster:gpu_energy_joules:increase_1h"),
                               self.value("sum(node:gpu_energy_joules:increase_1h)"), delta=1e-6 * self.value(
                                   "cluster:gpu_energy_joules:increase_1h"))

    def test_only_the_faulty_nodes_raise_hardware_alerts(self):
        self.assertEqual(len(self.faulty), 2, self.faulty)  # 3 % and 1 % of 50, dealt: one node each

        def raised():
            alerts = self.prometheus.query('ALERTS{category="hardware"}')
            nodes = {a["metric"].get("Hostname") for a in alerts}
            return alerts if self.faulty <= nodes else None

        alerts = harness.wait_for(raised, 60, f"hardware alerts on {sorted(self.faulty)}")
        by_node = {}
        for a in alerts:
            by_node.setdefault(a["metric"].get("Hostname"), set()).add(
                (a["metric"]["alertname"], a["metric"].get("gpu"), a["metric"]["alertstate"]))
        print("\nhardware alerts:", file=sys.stderr)
        for node, names in sorted(by_node.items()):
            print(f"  {node} ({self.scenario_of.get(node)}): {sorted(names)}", file=sys.stderr)
        self.assertEqual(set(by_node), self.faulty)
        nvlink = next(h for h in self.faulty if self.scenario_of[h] == "h100-nvlink-crc-incident.yaml")
        self.assertIn(("GpuNvlinkErrorsRising", "3"), {(n, g) for n, g, _ in by_node[nvlink]})
        faults = next(h for h in self.faulty if self.scenario_of[h] == "h100-faults.yaml")
        self.assertTrue({n for n, _, _ in by_node[faults]} & {"GpuXidCritical", "GpuEccDoubleBitError", "GpuLost"},
                        by_node[faults])
        self.assertEqual(self.prometheus.query('ALERTS{alertname="GpuscopeAgentDown"}'), [])

    def test_no_rule_group_misses_an_iteration_or_fails(self):
        metrics = harness.http_get(self.prometheus.url + "/metrics", timeout=30)[2].decode()
        samples = harness.parse_exposition(metrics)
        missed = {dict(l)["rule_group"]: v for (n, l), v in samples.items()
                  if n == "prometheus_rule_group_iterations_missed_total"}
        failures = {dict(l)["rule_group"]: v for (n, l), v in samples.items()
                    if n == "prometheus_rule_evaluation_failures_total"}
        self.assertTrue(missed)
        self.assertEqual({g: v for g, v in missed.items() if v}, {})
        self.assertEqual({g: v for g, v in failures.items() if v}, {})
        for group in self.rule_groups():
            for rule in group["rules"]:
                self.assertEqual(rule["health"], "ok", f"{rule['name']}: {rule.get('lastError')}")

    def test_zz_figures(self):
        """Last (by name): the figures of this run, printed."""
        head = harness.parse_exposition(harness.http_get(self.prometheus.url + "/metrics", timeout=30)[2].decode())

        def own(name):
            return sum(v for (n, _), v in head.items() if n == name)

        samples = self.value('sum(scrape_samples_scraped{job="gpuscope"})')
        mean = self.value('avg(avg_over_time(scrape_duration_seconds{job="gpuscope"}[5m]))')
        worst = self.value('max(max_over_time(scrape_duration_seconds{job="gpuscope"}[5m]))')
        print(f"\n{NODES} nodes (fleet ready in {self.fleet_ready_s:.1f} s): {samples:.0f} samples per scrape "
              f"({samples / NODES:.0f} per node), {own('prometheus_tsdb_head_series'):.0f} head series, "
              f"{samples / INTERVAL_S:.0f} scraped samples/s, scrape duration mean {mean * 1000:.1f} ms "
              f"max {worst * 1000:.1f} ms", file=sys.stderr)
        print("rule groups (last evaluation, ms):", file=sys.stderr)
        for group in sorted(self.rule_groups(), key=lambda g: -g["evaluationTime"]):
            slowest = max(group["rules"], key=lambda r: r["evaluationTime"])
            print(f"  {group['name']:32s} {group['evaluationTime'] * 1000:8.2f}   slowest: {slowest['name']} "
                  f"{slowest['evaluationTime'] * 1000:.2f}", file=sys.stderr)
        self.assertGreater(samples, 0)


if __name__ == "__main__":
    unittest_main.main(sys.argv[:1])

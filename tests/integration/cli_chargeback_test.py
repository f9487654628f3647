"""Integration: `gpuscope chargeback` against a real Prometheus holding four hours of synthetic history with
known answers, backfilled with `promtool tsdb create-blocks-from openmetrics` (samples every 30 s, at 15 s
past each half minute, so none sits on a window boundary):

- node-a (2 x H100, 400 W each): Slurm job 101 (physics/ann/gpu) holds both GPUs the whole range at 80 %
  utilisation; the agent restarts at +1 h: no sample for 10 min, and GPU 0's energy counter starts again
  from zero after it (a driver reload), GPU 1's keeps counting.
- node-b (2 x A100-80GB): job 102 (physics/bob/gpu) holds GPU 0 from +30 min to +2 h 30 min (300 W), busy
  (60 %) the first hour and idle the second (gpuscope_gpu_allocated_idle = 1); GPU 0 is unallocated
  (hpc_job="") before and after, which must count for nobody. Job 103 (bio/cat/debug) holds GPU 1 the
  whole range (250 W) with SM active 25 % (which wins over its GPU utilisation of 90 %), and Prometheus
  misses 5 min of node-b's scrapes at +3 h (the counter runs on).
- node-k (Kubernetes, 2 x A100-80GB): pod research/train-1 holds GPU 0 from +1 h 30 min to +3 h 30 min
  (200 W, 40 %); GPU 1 is time-sliced between inference/serve-a and inference/serve-b the whole range
  (100 W, idle).

Expected figures are written out below from those facts. Usage: cli_chargeback_test.py GPUSCOPE PROMTOOL"""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402

GPUSCOPE, PROMTOOL = sys.argv[1:3]
SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
INTERVAL = 30
HOUR = 3600
# The range: four whole hours ending at least two hours ago (so the backfilled blocks do not overlap
# the head block Prometheus starts with).
T0 = (int(time.time()) // HOUR - 7) * HOUR
T_END = T0 + 4 * HOUR
SLOTS = [T0 + 15 + INTERVAL * k for k in range(4 * HOUR // INTERVAL)]  # 480 sample times

# GPU-hours, kWh: the answers, from the facts in the docstring.
A_GAP = (T0 + HOUR, T0 + HOUR + 600)  # node-a's agent restart
B_GAP = (T0 + 3 * HOUR, T0 + 3 * HOUR + 300)  # node-b's missed scrapes
JOB101_SAMPLES = 2 * (480 - 20)
JOB102_SAMPLES = 240
JOB103_SAMPLES = 480 - 10
EXPECTED = {
    "account": {
        "physics": {
            "gpu_hours_allocated": (JOB101_SAMPLES + JOB102_SAMPLES) * INTERVAL / HOUR,
            "gpu_hours_used": (JOB101_SAMPLES * 0.8 + 120 * 0.6) * INTERVAL / HOUR,
            "gpu_hours_idle": 120 * INTERVAL / HOUR,
            # GPU 0 of node-a lost the 600 s before its counter restarted; GPU 1 counted on through the gap.
            "energy_kwh": (400 * (4 * HOUR - 600) + 400 * 4 * HOUR + 300 * 2 * HOUR) / 3.6e6,
        },
        "bio": {
            "gpu_hours_allocated": JOB103_SAMPLES * INTERVAL / HOUR,
            "gpu_hours_used": JOB103_SAMPLES * 0.25 * INTERVAL / HOUR,
            "gpu_hours_idle": 0.0,
            "energy_kwh": 250 * 4 * HOUR / 3.6e6,
        },
    },
    "namespace": {
        "research": {"gpu_hours_allocated": 2.0, "gpu_hours_used": 0.8, "gpu_hours_idle": 0.0,
                     "energy_kwh": 200 * 2 * HOUR / 3.6e6},
        "inference": {"gpu_hours_allocated": 4.0, "gpu_hours_used": 0.0, "gpu_hours_idle": 4.0,
                      "energy_kwh": 100 * 4 * HOUR / 3.6e6},
    },
}
COSTS = ("currency: EUR\nmodels:\n"
         f'  "{H100}": {{gpu_hour: 4.0, kwh: 0.30}}\n'
         f'  "{A100}": {{gpu_hour: 2.0}}\n')
# physics: 7.667 H100 GPU-hours at 4.0 + their 3.133 kWh at 0.30, 2 A100 GPU-hours at 2.0.
EXPECTED["account"]["physics"]["cost_EUR"] = (
    JOB101_SAMPLES * INTERVAL / HOUR * 4.0 + (400 * (4 * HOUR - 600) + 400 * 4 * HOUR) / 3.6e6 * 0.30 + 2 * 2.0)
EXPECTED["account"]["bio"]["cost_EUR"] = JOB103_SAMPLES * INTERVAL / HOUR * 2.0
EXPECTED["namespace"]["research"]["cost_EUR"] = 2.0 * 2.0
EXPECTED["namespace"]["inference"]["cost_EUR"] = 4.0 * 2.0
# The tolerance: the JSON's cells are rounded to 0.01 GPU-hours, 0.001 kWh and 0.01 of currency; the
# figures themselves are exact here (every sample on the 30 s grid, none on a window boundary). On real
# data each allocation's start and end add at most one scrape interval (docs/cli/chargeback.md).
TOLERANCE = {"gpu_hours_allocated": 0.006, "gpu_hours_used": 0.006, "gpu_hours_idle": 0.006, "energy_kwh": 0.0006,
             "cost_EUR": 0.006}


def in_gap(t, gap):
    return gap[0] <= t < gap[1]


class History:
    """The synthetic samples, as OpenMetrics families {name: (type, [(labels, value, t)])}."""

    def __init__(self):
        self.families = {}

    def add(self, family, kind, labels, value, t):
        self.families.setdefault(family, (kind, []))[1].append((labels, value, t))

    def text(self):
        out = []
        for family, (kind, samples) in self.families.items():
            out.append(f"# TYPE {family} {kind}")
            # promtool wants each series' samples together and in time order.
            samples.sort(key=lambda s: (sorted(s[0].items()), s[2]))
            name = family + "_total" if kind == "counter" else family
            for labels, value, t in samples:
                body = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                out.append(f"{name}{{{body}}} {value} {t}")
        out.append("# EOF")
        return "\n".join(out) + "\n"


def gpu_labels(node, gpu, model, job=""):
    return {"job": "gpuscope", "instance": f"{node}:9400", "Hostname": node, "gpu": str(gpu),
            "UUID": f"GPU-{node}-{gpu}", "modelName": model, "hpc_job": job, "GPU_I_ID": ""}


def build_history():
    h = History()
    energy = {}  # UUID -> counter value

    def gpu_sample(node, gpu, model, t, watts, job="", util=None, sm=None, idle=None, pods=({},)):
        # As the agent does on a Kubernetes node: one copy of each GPU series per pod holding the GPU,
        # with its namespace, pod and container.
        key = gpu_labels(node, gpu, model, job)["UUID"]
        energy[key] = energy.get(key, 5e8) + watts * INTERVAL  # 5e8 J before the range
        for pod in pods:
            labels = dict(gpu_labels(node, gpu, model, job), **pod)
            h.add("gpuscope_gpu_energy_joules", "counter", labels, f"{energy[key]:.1f}", t)
            if util is not None:
                h.add("DCGM_FI_DEV_GPU_UTIL", "gauge", labels, util, t)
            if sm is not None:
                h.add("DCGM_FI_PROF_SM_ACTIVE", "gauge", labels, sm, t)
        labels = gpu_labels(node, gpu, model, job)
        if job:
            info = dict(labels, rank="0", step="batch")
            h.add("gpuscope_gpu_allocation_info", "gauge", info, 1, t)
            if idle is not None:
                h.add("gpuscope_gpu_allocated_idle", "gauge", labels, idle, t)

    def job_info(node, job, user, account, partition, t):
        h.add("gpuscope_job_info", "gauge",
              {"job": "gpuscope", "instance": f"{node}:9400", "Hostname": node, "hpc_job": job, "user": user,
               "uid": "1000", "account": account, "partition": partition, "job_name": "train"}, 1, t)

    for t in SLOTS:
        if not in_gap(t, A_GAP):
            # After the restart GPU 0's counter starts again from zero (a driver reload) 15 s before the
            # first sample: the 600 s of the gap are lost to it.
            if t == A_GAP[1] + 15:
                energy["GPU-node-a-0"] = 400 * 15 - 400 * INTERVAL
            gpu_sample("node-a", 0, H100, t, 400, "101", util=80, idle=0)
            # GPU 1's counter ran on through the restart: it gained the gap's energy too.
            if t == A_GAP[1] + 15:
                energy["GPU-node-a-1"] += 400 * 600
            gpu_sample("node-a", 1, H100, t, 400, "101", util=80, idle=0)
            job_info("node-a", "101", "ann", "physics", "gpu", t)
        if not in_gap(t, B_GAP):
            if T0 + 1800 <= t < T0 + 1800 + 2 * HOUR:
                busy = t < T0 + 1800 + HOUR
                gpu_sample("node-b", 0, A100, t, 300, "102", util=60 if busy else 0, idle=0 if busy else 1)
                job_info("node-b", "102", "bob", "physics", "gpu", t)
            else:
                gpu_sample("node-b", 0, A100, t, 300, util=0)
            if t == B_GAP[1] + 15:
                energy["GPU-node-b-1"] += 250 * 300
            gpu_sample("node-b", 1, A100, t, 250, "103", util=90, sm=0.25, idle=0)
            job_info("node-b", "103", "cat", "bio", "debug", t)
        # node-k: the Kubernetes node (no hpc_job; pods hold its GPUs).
        research = T0 + 5400 <= t < T0 + 5400 + 2 * HOUR
        gpu_sample("node-k", 0, A100, t, 200, util=40 if research else 0,
                   pods=({"namespace": "research", "pod": "train-1", "container": "main"},) if research else ({},))
        gpu_sample("node-k", 1, A100, t, 100, util=0,
                   pods=tuple({"namespace": "inference", "pod": name, "container": "main"}
                              for name in ("serve-a", "serve-b")))
        if T0 + 5400 <= t < T0 + 5400 + 2 * HOUR:
            pod = dict(gpu_labels("node-k", 0, A100), namespace="research", pod="train-1", container="main")
            del pod["hpc_job"]
            h.add("gpuscope_k8s_gpu_allocation_info", "gauge", dict(pod, resource="nvidia.com/gpu", shared="false"), 1, t)
            h.add("gpuscope_k8s_gpu_allocated_idle", "gauge", pod, 0, t)
        for name in ("serve-a", "serve-b"):
            pod = dict(gpu_labels("node-k", 1, A100), namespace="inference", pod=name, container="main")
            del pod["hpc_job"]
            h.add("gpuscope_k8s_gpu_allocation_info", "gauge", dict(pod, resource="nvidia.com/gpu", shared="true"), 1, t)
            h.add("gpuscope_k8s_gpu_allocated_idle", "gauge", pod, 1, t)
    return h


class GpuscopeChargeback(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prometheus = harness.Prometheus([], openmetrics=build_history().text(), promtool=PROMTOOL)
        cls.workdir = tempfile.mkdtemp(prefix="gpuscope-chargeback-costs-")
        cls.costs = os.path.join(cls.workdir, "costs.yaml")
        with open(cls.costs, "w") as f:
            f.write(COSTS)

    @classmethod
    def tearDownClass(cls):
        cls.prometheus.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def gpuscope(self, *args):
        return subprocess.run([GPUSCOPE, "chargeback", f"--prometheus.url={self.prometheus.url}", *args],
                              capture_output=True, text=True, timeout=120)

    def rows(self, by, fmt="json", *extra):
        done = self.gpuscope(f"--from={T0}", f"--to={T_END}", f"--by={by}", f"--costs={self.costs}",
                             f"--format={fmt}", *extra)
        self.assertEqual(done.returncode, 0, done.stderr)
        if fmt == "json":
            return {row[by]: row for row in json.loads(done.stdout)}
        return {row[by]: row for row in csv.DictReader(io.StringIO(done.stdout))}

    def assert_figures(self, rows, expected):
        self.assertEqual(sorted(rows), sorted(expected))
        for group, figures in expected.items():
            for column, value in figures.items():
                self.assertAlmostEqual(float(rows[group][column]), value, delta=TOLERANCE[column],
                                       msg=f"{group} {column}")

    def test_accounts_get_exact_hours_energy_and_cost_across_restart_reset_gap_and_churn(self):
        self.assert_figures(self.rows("account"), EXPECTED["account"])

    def test_users_and_partitions_split_the_same_hours(self):
        users = self.rows("user")
        self.assertEqual(sorted(users), ["ann", "bob", "cat"])
        self.assertAlmostEqual(users["ann"]["gpu_hours_allocated"], JOB101_SAMPLES * INTERVAL / HOUR, delta=0.006)
        self.assertAlmostEqual(users["bob"]["gpu_hours_allocated"], 2.0, delta=0.006)
        self.assertAlmostEqual(users["bob"]["gpu_hours_idle"], 1.0, delta=0.006)
        partitions = self.rows("partition")
        self.assertEqual(sorted(partitions), ["debug", "gpu"])
        self.assertAlmostEqual(partitions["gpu"]["gpu_hours_allocated"],
                               EXPECTED["account"]["physics"]["gpu_hours_allocated"], delta=0.006)

    def test_namespaces_split_a_time_sliced_gpu_among_its_pods(self):
        self.assert_figures(self.rows("namespace"), EXPECTED["namespace"])

    def test_small_windows_and_batches_give_the_same_answer(self):
        # 7-minute windows (not a divisor of the range: the last is shorter), several range queries.
        rows = self.rows("account", "json", "--step=420")
        self.assert_figures(rows, EXPECTED["account"])

    def test_csv_parses_and_matches_the_json(self):
        rows = self.rows("account", "csv")
        self.assertEqual(sorted(rows), ["bio", "physics"])
        for group in rows:
            self.assertAlmostEqual(float(rows[group]["gpu_hours_allocated"]),
                                   EXPECTED["account"][group]["gpu_hours_allocated"], delta=0.006)

    def test_text_table_ends_with_the_total(self):
        done = self.gpuscope(f"--from={T0}", f"--to={T_END}", f"--costs={self.costs}")
        self.assertEqual(done.returncode, 0, done.stderr)
        total = [line for line in done.stdout.splitlines() if line.startswith("TOTAL")]
        self.assertEqual(len(total), 1, done.stdout)
        expected = sum(e["gpu_hours_allocated"] for e in EXPECTED["account"].values())
        self.assertIn(f"{expected:.2f}", total[0])

    def test_a_model_missing_from_the_cost_table_is_named_and_its_cost_left_empty(self):
        partial = os.path.join(self.workdir, "partial.yaml")
        with open(partial, "w") as f:
            f.write(f'models:\n  "{H100}": {{gpu_hour: 4.0}}\n')
        done = self.gpuscope(f"--from={T0}", f"--to={T_END}", f"--costs={partial}", "--format=json")
        self.assertEqual(done.returncode, 0, done.stderr)
        rows = {row["account"]: row for row in json.loads(done.stdout)}
        self.assertIsNone(rows["physics"]["cost_USD"])
        self.assertIsNone(rows["bio"]["cost_USD"])
        self.assertEqual(rows["bio"]["unpriced_models"], A100)
        self.assertIn(A100, done.stderr)
        self.assertIn("physics", done.stderr)

    def test_bad_cost_table_is_a_clear_error_with_exit_2(self):
        bad = os.path.join(self.workdir, "bad.yaml")
        with open(bad, "w") as f:
            f.write(f'models:\n  "{H100}": {{gpu_hour: -4}}\n')
        done = self.gpuscope(f"--from={T0}", f"--to={T_END}", f"--costs={bad}")
        self.assertEqual(done.returncode, 2)
        self.assertIn("gpu_hour: a price must be a number >= 0", done.stderr)
        self.assertIn("bad.yaml", done.stderr)
        self.assertEqual(done.stdout, "")
        missing = self.gpuscope(f"--from={T0}", f"--to={T_END}", "--costs=/nonexistent/costs.yaml")
        self.assertEqual(missing.returncode, 2)
        self.assertIn("/nonexistent/costs.yaml", missing.stderr)

    def test_a_range_without_allocations_finds_nothing_with_exit_1(self):
        done = self.gpuscope(f"--from={T0 - 10 * HOUR}", f"--to={T0 - 9 * HOUR}")
        self.assertEqual(done.returncode, 1)
        self.assertIn("no allocated GPUs", done.stderr)

    def test_sacct_column_compares_with_slurms_gpu_hours(self):
        # No slurmdbd here (tests/integration/slurm_harness.py runs Slurm without accounting storage), so
        # a stand-in `sacct` prints what `sacct -X -n -P` prints for the history's three jobs and records
        # how it was called.
        bin_dir = os.path.join(self.workdir, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        utc = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))  # noqa: E731
        lines = [f"101|physics|ann|gpu|billing=2,cpu=2,gres/gpu=2,node=1|{utc(T0)}|{utc(T_END)}",
                 f"102|physics|bob|gpu|cpu=1,gres/gpu=1,node=1|{utc(T0 + 1800)}|{utc(T0 + 1800 + 2 * HOUR)}",
                 f"103|bio|cat|debug|cpu=1,gres/gpu=1,node=1|{utc(T0 - HOUR)}|Unknown",
                 f"104|bio|cat|debug|cpu=4,node=1|{utc(T0)}|{utc(T_END)}"]
        with open(os.path.join(bin_dir, "sacct"), "w") as f:
            f.write("#!/bin/sh\necho \"TZ=$TZ $*\" > \"$(dirname \"$0\")/args\"\n" +
                    "".join(f"echo '{line}'\n" for line in lines))
        os.chmod(os.path.join(bin_dir, "sacct"), 0o755)
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
        done = subprocess.run([GPUSCOPE, "chargeback", f"--prometheus.url={self.prometheus.url}", f"--from={T0}",
                               f"--to={T_END}", "--sacct", "--format=json"], capture_output=True, text=True,
                              timeout=120, env=env)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(os.path.join(bin_dir, "args")) as f:
            args = f.read().split()
        self.assertEqual(args[0], "TZ=UTC")
        self.assertEqual(args[args.index("-S") + 1], utc(T0))
        self.assertEqual(args[args.index("-E") + 1], utc(T_END))
        rows = {row["account"]: row for row in json.loads(done.stdout)}
        self.assertAlmostEqual(rows["physics"]["sacct_gpu_hours"], 10.0)
        self.assertAlmostEqual(rows["bio"]["sacct_gpu_hours"], 4.0)
        # The agents saw less than Slurm allocated by node-a's restart gap (2 GPUs x 10 min) and node-b's
        # missed scrapes (5 min): that is the difference, in percent of Slurm's figure.
        self.assertAlmostEqual(rows["physics"]["sacct_diff_percent"], -100 * (2 * 600 / HOUR) / 10.0, delta=0.1)
        self.assertAlmostEqual(rows["bio"]["sacct_diff_percent"], -100 * (300 / HOUR) / 4.0, delta=0.15)

        missing = subprocess.run([GPUSCOPE, "chargeback", f"--prometheus.url={self.prometheus.url}", f"--from={T0}",
                                  f"--to={T_END}", "--sacct", "--format=json"], capture_output=True, text=True,
                                 timeout=120, env=dict(os.environ, PATH="/nonexistent"))
        self.assertEqual(missing.returncode, 0, missing.stderr)
        self.assertIn("no comparison with Slurm's accounting", missing.stderr)
        self.assertTrue(all(row["sacct_gpu_hours"] is None for row in json.loads(missing.stdout)))

    def test_the_shipped_example_cost_table_parses(self):
        example = os.path.join(SOURCE, "deploy", "costs.example.yaml")
        done = self.gpuscope(f"--from={T0}", f"--to={T_END}", f"--costs={example}", "--format=json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(all(row["cost_USD"] is not None for row in json.loads(done.stdout)))


class ChargebackReconcilesWithTheMixinRules(unittest.TestCase):
    """The mixin's recording rules, evaluated over the same history every 30 s as Prometheus would have
    (promtool backfills them level by level: each level reads the one before), against the chargeback's
    figures. Live, Prometheus marks a series stale as soon as a scrape lacks it (job end, failed scrape);
    backfilled history has no staleness markers, so the rules are evaluated with a lookback of one scrape
    interval (31 s) instead of 5 min to see series end as they would live.

    Tolerances: the rules count GPUs at their evaluations, the chargeback at the samples: each start, end
    or gap edge of a GPU's allocation (and the range's start) may differ by one evaluation plus the
    lookback. Their hourly increase() sees each hour alone, so a gap or counter reset inside an hour is
    extrapolated over (the chargeback reads the counter across it): they may differ by the power of the
    GPU over each gap or reset plus one scrape interval at each hour edge."""

    LOOKBACK = 31
    EDGE = (LOOKBACK + INTERVAL) / HOUR  # hours, per GPU allocation edge

    LEVELS = (("gpuscope:gpu_utilisation:ratio", "account:gpu_energy_joules:increase_1h"),
              ("gpuscope:gpu_utilisation_attributed:ratio",),
              ("account:gpus_allocated:count", "gpuscope:gpu_allocated_idle:bool"),
              ("account:gpu_allocated_idle_hours:sum_1h",))

    @classmethod
    def setUpClass(cls):
        cls.prometheus = harness.Prometheus([], openmetrics=build_history().text(), promtool=PROMTOOL,
                                            extra_args=[f"--query.lookback-delta={cls.LOOKBACK}s"])
        try:
            with open(os.path.join(SOURCE, "deploy", "mixin", "generated", "prometheus", "recording_rules.yaml")) as f:
                rules = {r["record"]: r for g in yaml.safe_load(f)["groups"] for r in g["rules"]}
            for level, names in enumerate(cls.LEVELS):
                path = os.path.join(cls.prometheus.workdir, f"rules{level}.yml")
                with open(path, "w") as f:
                    yaml.safe_dump({"groups": [{"name": f"level{level}", "interval": "30s",
                                                "rules": [rules[n] for n in names]}]}, f)
                cls.prometheus.backfill_rules(path, T0, T_END)
            done = subprocess.run([GPUSCOPE, "chargeback", f"--prometheus.url={cls.prometheus.url}", f"--from={T0}",
                                   f"--to={T_END}", "--format=json"], capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                raise AssertionError(done.stderr)
            cls.ours = {row["account"]: row for row in json.loads(done.stdout)}
        except BaseException:
            cls.prometheus.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.prometheus.stop()

    def by_account(self, promql):
        return {r["metric"].get("account", ""): float(r["value"][1]) for r in self.prometheus.query(promql, at=T_END)}

    def test_allocated_gpu_hours_match_within_an_evaluation_per_allocation_edge(self):
        rules = self.by_account("sum_over_time(account:gpus_allocated:count[4h]) * 30 / 3600")
        # physics: the range's start and node-a's restart gap (start and end) on 2 GPUs, job 102's start
        # and end; bio: the range's start and node-b's gap.
        edges = {"physics": 2 * 3 + 2, "bio": 3}
        for account, n in edges.items():
            self.assertAlmostEqual(rules[account], EXPECTED["account"][account]["gpu_hours_allocated"],
                                   delta=n * self.EDGE, msg=account)
        # Evaluations at an edge where one rule level still saw the GPU and the next did not the job's
        # info count for no account: within the same edges in total.
        self.assertAlmostEqual(sum(rules.values()),
                               sum(e["gpu_hours_allocated"] for e in EXPECTED["account"].values()),
                               delta=sum(edges.values()) * self.EDGE)

    def test_idle_gpu_hours_match_within_an_evaluation_per_idle_edge(self):
        rules = self.by_account("sum_over_time(account:gpu_allocated_idle_hours:sum_1h[4h:1h])")
        # job 102's idle hour starts and ends; one evaluation on an hour boundary may count in both hours
        # (Prometheus 2's range selectors include both ends).
        self.assertAlmostEqual(rules["physics"], EXPECTED["account"]["physics"]["gpu_hours_idle"],
                               delta=2 * self.EDGE + INTERVAL / HOUR)
        self.assertAlmostEqual(rules.get("bio", 0.0), 0.0, delta=0.001)

    def test_energy_matches_within_the_gap_the_hourly_rule_extrapolates_over(self):
        rules = self.by_account("sum_over_time(account:gpu_energy_joules:increase_1h[4h:1h]) / 3.6e6")
        # bio's job runs the whole range; node-b's 5-min gap at +3 h and each hour's edges (half an
        # interval of extrapolation each) bound the difference.
        bound = (250 * (300 + 2 * INTERVAL) + 250 * 4 * INTERVAL) / 3.6e6
        self.assertAlmostEqual(rules["bio"], EXPECTED["account"]["bio"]["energy_kwh"], delta=bound)
        # physics: job 102 ends within an hour, and the rule keeps its last hour (it joins the job's account
        # as it was at any time in the window). Its three GPUs' hourly edges bound the difference, plus the
        # energy of node-a's 600 s restart gap that GPU 1's counter gained in one jump: the gap starts on an
        # hour, and on Prometheus 3 (ranges open at their start) no hourly window holds both samples around
        # the jump, so the rule loses it; Prometheus 2's closed ranges keep it. The chargeback's windows
        # compare with the last sample before, and keep it on both.
        bound = ((400 + 400 + 300) * 4 * 2 * (INTERVAL / 2) + 400 * 600) / 3.6e6
        self.assertAlmostEqual(rules["physics"], EXPECTED["account"]["physics"]["energy_kwh"], delta=bound)

if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

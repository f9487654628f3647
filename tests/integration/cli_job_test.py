"""Integration: `gpuscope job` against real Prometheus scraping two simulated nodes' agents: gpu-node-04
(h100-allocated-idle.yaml, job 4104: 8 GPUs held, no work) and gpu-node-01 (h100-training.yaml, job 4101:
8 busy GPUs). The report's figures must equal what the test computes itself from the raw samples Prometheus
holds over the same window (and, for energy, the same PromQL increase()); the idle note must name 4104's
GPUs and be absent for 4101, whose report (a healthy training job) has no note and no event at all.

The idle share counts the samples whose utilisation read idle, so a job idle from its start reads idle
from its first sample (gpuscope_gpu_allocated_idle, which turns 1 only after 60 s of idleness, would read
about half after two minutes): the test waits only for 30 samples of the jobs' life. Both jobs still run,
so both reports are "so far"; sacct has no Slurm configuration here, so the report says it is not
reachable.

Usage: cli_job_test.py AGENT SIM_LIBRARY GPUSCOPE"""

import json
import math
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402

AGENT, SIM, GPUSCOPE = sys.argv[1:4]
NODES = tuple(n for n in fleet.DEMO_NODES if n.hostname in ("gpu-node-01", "gpu-node-04"))


class GpuscopeJob(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = fleet.Fleet(AGENT, SIM, NODES)
        try:
            cls.prometheus = cls.fleet.prometheus

            def life_of_30_samples():
                life = cls.prometheus.query('min(count_over_time(gpuscope_job_info{hpc_job=~"4101|4104"}[10m]))')
                return life and float(life[0]["value"][1]) > 30

            harness.wait_for(life_of_30_samples, 240, "30 samples of jobs 4101 and 4104")
            cls.reports = {job: cls.run_json(job) for job in ("4104", "4101")}
        except BaseException:
            cls.fleet.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.fleet.stop()

    @classmethod
    def gpuscope(cls, *args, lookback="--lookback=900"):
        return subprocess.run([GPUSCOPE, *args, f"--prometheus.url={cls.prometheus.url}", lookback],
                              capture_output=True, text=True, timeout=60)

    @classmethod
    def run_json(cls, job):
        done = cls.gpuscope("job", job, "--format=json")
        if done.returncode != 0:
            raise AssertionError(f"gpuscope job {job} exited {done.returncode}: {done.stderr}")
        return json.loads(done.stdout)

    def raw(self, metric, job, report):
        """{(Hostname, gpu): [values]} of the raw samples in the report's window."""
        at, window = report["last_seen"], int(report["window_seconds"])
        result = self.prometheus.query(f'{metric}{{hpc_job="{job}"}}[{window}s]', at=at)
        return {(r["metric"]["Hostname"], r["metric"]["gpu"]): [float(v) for _, v in r["values"]] for r in result}

    def by_gpu(self, report):
        return {(g["hostname"], g["gpu"]): g for g in report["gpus"]}

    def test_nodes_gpus_and_life_match_the_job_info_samples(self):
        for job, host in (("4104", "gpu-node-04"), ("4101", "gpu-node-01")):
            report = self.reports[job]
            self.assertEqual(sorted(self.by_gpu(report)), [(host, str(i)) for i in range(8)])
            result = self.prometheus.query(f'gpuscope_job_info{{hpc_job="{job}"}}[900s]', at=report["last_seen"])
            times = [float(t) for r in result for t, _ in r["values"]]
            self.assertGreaterEqual(report["first_seen"], min(times))
            self.assertLess(report["first_seen"], min(times) + 1.0)
            self.assertAlmostEqual(report["run_time_seconds"], report["last_seen"] - report["first_seen"])
            self.assertEqual(report["user"], {"4104": "dave", "4101": "alice"}[job])

    def test_figures_equal_the_raw_samples(self):
        checks = (("DCGM_FI_DEV_GPU_UTIL", "utilization_percent", lambda v: sum(v) / len(v)),
                  ("DCGM_FI_DEV_FB_USED", "memory_peak_mib", max),
                  ("DCGM_FI_DEV_POWER_USAGE", "power_mean_watts", lambda v: sum(v) / len(v)))
        for job, report in self.reports.items():
            gpus = self.by_gpu(report)
            for metric, field, reduce in checks:
                raw = self.raw(metric, job, report)
                self.assertEqual(sorted(raw), sorted(gpus), f"{job} {metric}")
                for key, values in raw.items():
                    self.assertTrue(math.isclose(gpus[key][field], reduce(values), rel_tol=1e-9, abs_tol=1e-9),
                                    f"job {job} {key} {field}: report {gpus[key][field]}, samples {reduce(values)}")
            used = self.raw("DCGM_FI_DEV_FB_USED", job, report)
            free = self.raw("DCGM_FI_DEV_FB_FREE", job, report)
            reserved = self.raw("DCGM_FI_DEV_FB_RESERVED", job, report)
            for key in gpus:
                self.assertEqual(gpus[key]["memory_total_mib"], used[key][-1] + free[key][-1] + reserved[key][-1])
                self.assertEqual(round(gpus[key]["memory_total_mib"] / 1024), 80)  # an 80 GB H100 reads 80 GiB
            # Idle share: the samples of SM active (the simulated H100s report it) below 5%.
            active = self.raw("DCGM_FI_PROF_SM_ACTIVE", job, report)
            self.assertEqual(sorted(active), sorted(gpus))
            for key, values in active.items():
                self.assertEqual(gpus[key]["idle_fraction"], sum(v < 0.05 for v in values) / len(values), (job, key))
            # Throttling: the mean of each reason's 0/1 samples, gpu_idle and the clock settings left out.
            at, window = report["last_seen"], int(report["window_seconds"])
            throttle = {}
            for r in self.prometheus.query(f'gpuscope_gpu_clock_event_active{{hpc_job="{job}"}}[{window}s]', at=at):
                if r["metric"]["reason"] in ("gpu_idle", "applications_clocks_setting", "display_clock_setting"):
                    continue
                values = [float(v) for _, v in r["values"]]
                throttle.setdefault((r["metric"]["Hostname"], r["metric"]["gpu"]), {})[r["metric"]["reason"]] = (
                    sum(values) / len(values))
            self.assertEqual(sorted(throttle), sorted(gpus))
            for key, reasons in throttle.items():
                self.assertEqual(sorted(gpus[key]["throttle_fraction"]), sorted(reasons))
                for reason, fraction in reasons.items():
                    self.assertTrue(math.isclose(gpus[key]["throttle_fraction"][reason], fraction, rel_tol=1e-9),
                                    (job, key, reason))
            window = int(report["window_seconds"])
            energy = self.prometheus.query(
                f'increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{hpc_job="{job}"}}[{window}s])',
                at=report["last_seen"])
            for r in energy:
                key = (r["metric"]["Hostname"], r["metric"]["gpu"])
                self.assertTrue(math.isclose(gpus[key]["energy_joules"], float(r["value"][1]) / 1000, rel_tol=1e-9))
            self.assertEqual(len(energy), 8)
            seconds = self.prometheus.query(
                f'increase(gpuscope_gpu_clock_event_seconds_total{{hpc_job="{job}"}}[{window}s])', at=report["last_seen"])
            self.assertTrue(seconds)
            for r in seconds:
                key = (r["metric"]["Hostname"], r["metric"]["gpu"])
                self.assertTrue(math.isclose(gpus[key]["throttle_seconds"][r["metric"]["reason"]], float(r["value"][1]),
                                             rel_tol=1e-9, abs_tol=1e-12), (job, key, r["metric"]["reason"]))

    def test_idle_note_for_the_idle_job_only(self):
        idle = [n for n in self.reports["4104"]["notes"] if " idle " in n]
        self.assertEqual(len(idle), 1, self.reports["4104"]["notes"])
        self.assertTrue(idle[0].startswith("GPUs 0, 1, 2, 3, 4, 5, 6 and 7 were idle "), idle[0])
        self.assertEqual(self.reports["4104"]["grade"], "F")
        self.assertEqual([n for n in self.reports["4101"]["notes"] if " idle " in n], [])
        self.assertIn(self.reports["4101"]["grade"], ("A", "B"))
        # Idle from its start, so idle from its first samples (the agent's 60-s signal would read about half).
        self.assertGreaterEqual(min(g["idle_fraction"] for g in self.reports["4104"]["gpus"]), 0.9)

    def test_healthy_training_job_has_no_note_and_no_event(self):
        self.assertEqual(self.reports["4101"]["notes"], [])
        self.assertEqual(self.reports["4101"]["events"], [])

    def test_running_jobs_are_reported_so_far_and_sacct_not_reachable_is_said(self):
        for job, report in self.reports.items():
            self.assertTrue(report["running"], job)
            self.assertEqual(report["slurm"]["reachable"], False, job)
            self.assertTrue(report["slurm"]["error"], job)
        # The default lookback (7 days) finds the life on a grid of 61 s: its ends come from the raw samples, so
        # the last sample is still the latest scrape, not the last grid point up to a minute before.
        week = self.gpuscope("job", "4101", "--format=json", lookback="--lookback=604800")
        self.assertEqual(week.returncode, 0, week.stderr)
        week = json.loads(week.stdout)
        self.assertTrue(week["running"])
        self.assertEqual(week["first_seen"], self.reports["4101"]["first_seen"])
        self.assertGreaterEqual(week["last_seen"], self.reports["4101"]["last_seen"])

    def test_text_report_and_errors(self):
        text = self.gpuscope("job", "4104")
        self.assertEqual(text.returncode, 0, text.stderr)
        print(text.stdout + self.gpuscope("job", "4101").stdout)  # for the log: what a person sees
        self.assertIn("Job 4104 (notebook)\n", text.stdout)
        self.assertIn("nodes      1 (gpu-node-04)\n", text.stdout)
        self.assertIn("GPUs 0, 1, 2, 3, 4, 5, 6 and 7 were idle ", text.stdout)
        self.assertIn(" so far (running: every figure is up to now)\n", text.stdout)
        self.assertIn("  slurm      (sacct not reachable: ", text.stdout)
        self.assertIn("   80 GiB ", text.stdout)
        missing = self.gpuscope("job", "999999")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("no gpuscope_job_info for job 999999", missing.stderr)
        usage = self.gpuscope("job", "4104", "--format=yaml")
        self.assertEqual(usage.returncode, 2)
        self.assertIn("--format must be text or json", usage.stderr)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

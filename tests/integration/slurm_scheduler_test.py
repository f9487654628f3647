"""The Slurm scheduler collector against a real Slurm 22.05 (slurm_harness.SlurmCluster: one node, 8 fake
GPUs, partitions gpu and debug), driven through tests/unit/collectors/slurm/slurm_scheduler_probe (the
collector built from argv, one Collect() per run, exposition on stdout): submit, hold, drain/resume,
GPUs allocated per partition, and slurmctld stopped -> gpuscope_slurm_up 0 with a reason, no hang.
Needs root and the Debian packages munge, slurmctld, slurmd, slurm-client.

Usage: slurm_scheduler_test.py PATH/TO/slurm_scheduler_probe"""

import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import slurm_harness  # noqa: E402

PROBE = None


@unittest.skipUnless(slurm_harness.slurm_available(), "needs root and the Slurm Debian packages")
class SlurmSchedulerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = slurm_harness.SlurmCluster()
        cls.cluster.start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def probe(self, *args):
        """(samples, status line, wall seconds) of one probe run against the cluster."""
        began = time.monotonic()
        result = subprocess.run([PROBE, *args], env=self.cluster.env, capture_output=True, text=True,
                                timeout=120)
        elapsed = time.monotonic() - began
        self.assertEqual(result.returncode, 0, result.stderr)
        return harness.parse_exposition(result.stdout), result.stderr.strip(), elapsed

    def value(self, samples, name, **labels):
        """The value of the one sample of `name` whose labels include `labels`, else None."""
        found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)]
        return found[0] if len(found) == 1 else (None if not found else found)

    def wait_value(self, name, expected, timeout=30, **labels):
        def check():
            samples, _, _ = self.probe()
            return self.value(samples, name, **labels) == expected
        harness.wait_for(check, timeout, f"{name}{labels} == {expected}")

    def test_1_jobs_holds_drain_and_gpus_follow_the_cluster(self):
        c = self.cluster
        samples, status, _ = self.probe()
        self.assertEqual(self.value(samples, "gpuscope_slurm_up"), 1, status)
        self.assertEqual(self.value(samples, "gpuscope_slurm_partition_gpus", partition="gpu"), 8)
        self.assertEqual(self.value(samples, "gpuscope_slurm_partition_gpus_allocated", partition="gpu"), 0)
        self.assertEqual(self.value(samples, "gpuscope_slurm_node_draining", node=c.node), 0)
        self.assertIsNotNone(self.value(samples, "gpuscope_slurm_scheduler_server_threads"))

        running = c.sbatch("sleep 300", ["--gres=gpu:2"], user="alice")
        c.wait_for_state(running, "RUNNING")
        self.wait_value("gpuscope_slurm_partition_gpus_allocated", 2, partition="gpu")
        samples, _, _ = self.probe()
        self.assertEqual(self.value(samples, "gpuscope_slurm_node_gpus_allocated", node=c.node), 2)
        self.assertEqual(self.value(samples, "gpuscope_slurm_node_gpus_idle", node=c.node), 6)
        self.assertEqual(self.value(samples, "gpuscope_slurm_jobs", state="RUNNING", partition="gpu",
                                    user="alice"), 1)
        self.assertEqual(self.value(samples, "gpuscope_slurm_job_gpus", state="RUNNING", partition="gpu"), 2)

        held = c.sbatch("sleep 300", ["--hold"], user="alice")  # held by its user
        blocked = c.sbatch("sleep 300", ["--gres=gpu:8"])  # cannot start while 2 GPUs are in use
        c.run_client(["scontrol", "hold", blocked])  # held by root: an admin hold
        self.wait_value("gpuscope_slurm_jobs_pending", 1, partition="gpu", reason="JobHeldUser")
        self.wait_value("gpuscope_slurm_jobs_pending", 1, partition="gpu", reason="JobHeldAdmin")
        samples, _, _ = self.probe()
        self.assertEqual(self.value(samples, "gpuscope_slurm_jobs", state="PENDING", partition="gpu",
                                    user="alice"), 1)
        self.assertEqual(self.value(samples, "gpuscope_slurm_jobs", state="PENDING", partition="gpu",
                                    user="root"), 1)

        c.run_client(["scontrol", "update", f"NodeName={c.node}", "State=DRAIN", "Reason=test"])
        self.wait_value("gpuscope_slurm_node_draining", 1, node=c.node, reason="test")
        c.run_client(["scontrol", "update", f"NodeName={c.node}", "State=RESUME"])
        self.wait_value("gpuscope_slurm_node_draining", 0, node=c.node)

        for job in (running, held, blocked):
            c.scancel(job)
        self.wait_value("gpuscope_slurm_partition_gpus_allocated", 0, partition="gpu")

    def test_2_stopped_controller_gives_up_zero_with_a_reason_and_no_hang(self):
        c = self.cluster
        c.stop_controller()
        try:
            # The clients retry for ~9 s: a 3 s timeout kills them (timeout), a 20 s one lets them fail.
            samples, status, elapsed = self.probe("--timeout-ms=3000")
            self.assertEqual(self.value(samples, "gpuscope_slurm_up"), 0)
            self.assertEqual(self.value(samples, "gpuscope_slurm_error_info", command="squeue",
                                        reason="timeout"), 1)
            self.assertIn("status=UNAVAILABLE", status)
            self.assertLess(elapsed, 3 + 10, "Collect() must return at its timeout")  # generous: shared host
            print(f"controller down, 3 s timeout: probe ran {elapsed:.1f} s", file=sys.stderr)

            samples, status, _ = self.probe("--timeout-ms=20000")
            self.assertEqual(self.value(samples, "gpuscope_slurm_up"), 0)
            self.assertEqual(self.value(samples, "gpuscope_slurm_error_info", command="sinfo",
                                        reason="controller_unreachable"), 1, status)
            self.assertIn("Unable to contact slurm controller", status)
        finally:
            c.start_controller()
        self.wait_value("gpuscope_slurm_up", 1)


if __name__ == "__main__":
    PROBE = sys.argv.pop(1)
    unittest_main.main()

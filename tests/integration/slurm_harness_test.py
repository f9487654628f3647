"""Self-test of slurm_harness.SlurmCluster: a real Slurm 22.05 starts on loopback, runs a GPU job as the
test user, runs our Prolog/Epilog (through the wrapper that exports extra variables) with SLURM_JOB_GPUS
set, survives a controller restart, and stop() leaves nothing behind. Needs root and the Debian packages
munge, slurmctld, slurmd, slurm-client.

Usage: slurm_harness_test.py"""

import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import slurm_harness  # noqa: E402

RECORDER = """#!/bin/sh
# Test prolog/epilog: records its environment, one file per job and script.
env > "$RECORD_DIR/$1-$SLURM_JOB_ID.env.tmp" && mv "$RECORD_DIR/$1-$SLURM_JOB_ID.env.tmp" "$RECORD_DIR/$1-$SLURM_JOB_ID.env"
"""


def read_env(path):
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


@unittest.skipUnless(slurm_harness.slurm_available(), "needs root and the Slurm Debian packages")
class SlurmHarnessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.record_dir = tempfile.mkdtemp(prefix="gpuscope-slurm-record-")
        cls.addClassCleanup(shutil.rmtree, cls.record_dir, True)  # also when start() fails
        os.chmod(cls.record_dir, 0o777)
        cls.scripts = {}
        for name in ("prolog", "epilog"):
            path = os.path.join(cls.record_dir, f"{name}.sh")
            with open(path, "w") as f:
                # The wrapper passes no arguments; give each script its own name through a tiny shim.
                f.write(RECORDER.replace("$1", name))
            os.chmod(path, 0o755)
            cls.scripts[name] = path
        cls.cluster = slurm_harness.SlurmCluster(prolog=cls.scripts["prolog"], epilog=cls.scripts["epilog"],
                                                 script_env={"RECORD_DIR": cls.record_dir,
                                                             "GPUSCOPE_MAPPING_DIR": "/nonexistent/map"})
        cls.cluster.start()
        print(f"slurm start-up: {cls.cluster.startup_seconds:.2f} s", file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        temp_dir = cls.cluster.dir
        cls.cluster.stop()
        assert temp_dir is None or not os.path.exists(temp_dir), "stop() left the temp dir"

    def test_gpu_job_runs_prolog_and_epilog_with_its_gpus_and_our_environment(self):
        submitted = time.monotonic()
        job = self.cluster.sbatch("sleep 2", ["--gres=gpu:2"], user="alice", account="physics")
        self.cluster.wait_for_state(job, ("RUNNING", "COMPLETED"))
        print(f"sbatch -> RUNNING: {time.monotonic() - submitted:.2f} s", file=sys.stderr)
        prolog_env = os.path.join(self.record_dir, f"prolog-{job}.env")
        harness.wait_for(lambda: os.path.exists(prolog_env), 10, "the prolog's record")
        env = read_env(prolog_env)
        self.assertEqual(env["SLURM_JOB_GPUS"], "0,1")
        self.assertEqual(env["SLURM_JOB_USER"], "alice")
        self.assertEqual(env["SLURM_JOB_ACCOUNT"], "physics")
        self.assertEqual(env["SLURM_JOB_PARTITION"], "gpu")
        self.assertEqual(env["GPUSCOPE_MAPPING_DIR"], "/nonexistent/map")
        self.cluster.wait_for_state(job, "COMPLETED", timeout=30)
        epilog_env = os.path.join(self.record_dir, f"epilog-{job}.env")
        harness.wait_for(lambda: os.path.exists(epilog_env), 10, "the epilog's record")
        self.assertEqual(read_env(epilog_env)["SLURM_JOB_GPUS"], "0,1")

    def test_show_job_parses_user_account_partition_and_spaces_in_the_job_name(self):
        job = self.cluster.sbatch("sleep 30", ["--gres=gpu:1", "--job-name=my training run"], user="alice",
                                  account="chem", partition="debug")
        self.cluster.wait_for_state(job, "RUNNING")
        fields = self.cluster.show_job(job)
        self.assertEqual(fields["JobName"], "my training run")
        self.assertEqual(fields["UserId"].split("(")[0], "alice")
        self.assertEqual(fields["Account"], "chem")
        self.assertEqual(fields["Partition"], "debug")
        self.assertIn({"job_id": job, "state": "RUNNING", "user": "alice", "account": "chem",
                       "partition": "debug", "name": "my training run"}, self.cluster.squeue())
        self.cluster.scancel(job)
        self.cluster.wait_for_state(job, "CANCELLED")

    def test_running_job_survives_a_controller_restart(self):
        job = self.cluster.sbatch("sleep 60", ["--gres=gpu:1"], user="alice")
        self.cluster.wait_for_state(job, "RUNNING")
        self.cluster.stop_controller()
        down = self.cluster.run_client(["scontrol", "show", "job", job], check=False, timeout=3)
        self.assertNotEqual(down.returncode, 0)
        self.cluster.start_controller()
        self.assertEqual(self.cluster.wait_for_state(job, "RUNNING"), "RUNNING")
        self.cluster.requeue(job)
        self.cluster.wait_for_state(job, ("PENDING", "REQUEUED", "RUNNING"))
        self.cluster.scancel(job)
        self.cluster.wait_for_state(job, "CANCELLED")


if __name__ == "__main__":
    unittest_main.main()

"""Integration: every GPU series tied to a job, a user and an account, on a real Slurm.

A real single-node Slurm 22.05 (Debian packages, loopback, 8 fake GPUs as gres) runs our prolog and
epilog (deploy/slurm). gpuscope-agent runs on the simulator's slurm-node scenario, in which a process
marked GPUSCOPE_SIM_GPU_PROCESS=1 is a GPU process: the jobs' real pids appear in NVML. The scenario
numbers /dev/nvidiaN minors differently from NVML indices (the prolog pitfall), so a job's labels land on
the GPUs its process uses only if the prolog maps Slurm index -> minor -> NVML index correctly.

Timing is counted in the agent's own GPU collection cycles, never in wall-clock thresholds: "appears
within one collection interval" is checked as "present in the first cycle that started after the job
was RUNNING".

Usage: slurm_attribution_test.py AGENT SIM_LIBRARY REPO_ROOT"""

import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import slurm_harness  # noqa: E402

AGENT, SIM, ROOT = sys.argv[1:4]

# NVML index i has minor 7 - i: Slurm's index (= minor) is never the NVML index.
SCENARIO = """seed: 3003
proc_processes: {marker: GPUSCOPE_SIM_GPU_PROCESS, memory_gib: 2}
gpus:
  count: 8
  model: h100
  workload: {type: training, memory_gib: 40}
  overrides:
%s
""" % "\n".join(f"    {i}: {{minor: {7 - i}}}" for i in range(8))

# A GPU job: marks itself as a GPU process on the NVML GPUs behind the minors Slurm gave it
# (CUDA_VISIBLE_DEVICES holds Slurm's indices, i.e. minors, when devices are not constrained).
GPU_JOB = ("export GPUSCOPE_SIM_GPU_PROCESS=1; g=; for m in $(echo $CUDA_VISIBLE_DEVICES | tr , ' '); do "
           "i=$(awk -v m=$m '$2==m {print $1}' %s); g=$g${g:+,}$i; done; export GPUSCOPE_SIM_GPUS=$g; "
           "exec sleep %d")


def labels_of(line):
    return dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', line))


@unittest.skipUnless(slurm_harness.slurm_available(), "needs root and the Slurm Debian packages")
class SlurmAttribution(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="gpuscope-attribution-")
        cls.addClassCleanup(shutil.rmtree, cls.work, True)
        os.chmod(cls.work, 0o755)
        cls.mapping_dir = os.path.join(cls.work, "jobs")
        cls.device_map = os.path.join(cls.work, "devices")
        scenario = os.path.join(cls.work, "slurm-node.yaml")
        with open(scenario, "w") as f:
            f.write(SCENARIO)
        cls.cluster = slurm_harness.SlurmCluster(
            prolog=os.path.join(ROOT, "deploy/slurm/prolog.sh"), epilog=os.path.join(ROOT, "deploy/slurm/epilog.sh"),
            script_env={"GPUSCOPE_MAPPING_DIR": cls.mapping_dir, "GPUSCOPE_DEVICE_MAP": cls.device_map})
        cls.cluster.start()
        cls.addClassCleanup(cls.cluster.stop)
        cls.agent = harness.Agent(
            AGENT, SIM, scenario,
            extra_args=["--hpc-job-mapping-dir", cls.mapping_dir, "--attribution.device-map-file", cls.device_map,
                        "--attribution.slurm", "--attribution.slurm.interval=2s"],
            env={"SLURM_CONF": cls.cluster.conf_path})
        cls.addClassCleanup(cls.agent.cleanup)
        cls.addClassCleanup(cls.agent.stop)
        harness.wait_for(lambda: os.path.exists(cls.device_map), 30, "the agent's device map")

    # ---- helpers ---------------------------------------------------------------------------------

    def series(self, name, **match):
        out = []
        for line in self.agent.metrics().splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                labels = labels_of(line)
                if all(labels.get(k, "") == v for k, v in match.items()):
                    out.append((labels, float(line.rsplit(" ", 1)[1])))
        return out

    def gpu_cycles(self):
        found = self.series("gpuscope_collector_runs_total", collector="gpu")
        return int(found[0][1]) if found else 0

    def after_next_full_cycle(self):
        """Waits until a GPU collection cycle that started after now has completed."""
        start = self.gpu_cycles()
        harness.wait_for(lambda: self.gpu_cycles() >= start + 2, 30, "two more GPU cycles")

    def gpus_of(self, job):
        return sorted(l["gpu"] for l, _ in self.series("DCGM_FI_DEV_GPU_UTIL", hpc_job=job))

    def process_gpus_of(self, job):
        return sorted({l["gpu"] for l, _ in self.series("gpuscope_gpu_process_memory_bytes", hpc_job=job)})

    def submit_gpu_job(self, gpus, seconds=300, user="alice", account="ml", extra=()):
        script = GPU_JOB % (self.device_map, seconds)
        job = self.cluster.sbatch(script, [f"--gres=gpu:{gpus}", *extra], user=user, account=account)
        self.addCleanup(lambda: self.cluster.run_client(["scancel", job], check=False))
        return job

    def wait_running(self, job):
        self.cluster.wait_for_state(job, "RUNNING", timeout=60)

    def wait_gone(self, job):
        """After the job ended: its epilog has removed its record, and a full cycle ran since."""
        record = os.path.join(self.mapping_dir, f"gpuscope-job.{job}")
        harness.wait_for(lambda: not os.path.exists(record), 60, f"the epilog of job {job}")
        self.after_next_full_cycle()

    # ---- tests -------------------------------------------------------------------------------------

    def test_gpu_job_is_labelled_on_its_process_gpus_with_user_account_partition_and_vanishes(self):
        job = self.submit_gpu_job(2, seconds=6)
        self.wait_running(job)
        self.after_next_full_cycle()
        gpus = self.gpus_of(job)
        self.assertEqual(len(gpus), 2, "the job's two GPUs carry hpc_job in the first full cycle")
        self.assertEqual(gpus, self.process_gpus_of(job),
                         "the prolog mapped Slurm's minors to the NVML GPUs the job's process runs on")
        info = self.series("gpuscope_job_info", hpc_job=job)
        self.assertEqual(len(info), 1)
        self.assertEqual(info[0][0]["user"], "alice")
        self.assertEqual(info[0][0]["account"], "ml")
        self.assertEqual(info[0][0]["partition"], "gpu")
        self.assertEqual(info[0][0]["Hostname"], "sim-node")
        allocations = self.series("gpuscope_gpu_allocation_info", hpc_job=job)
        self.assertEqual(sorted(l["gpu"] for l, _ in allocations), gpus)
        self.assertEqual({l["rank"] for l, _ in allocations}, {"0"}, "rank from the batch step's SLURM_PROCID")
        idle = self.series("gpuscope_gpu_allocated_idle", hpc_job=job)
        self.assertEqual([v for _, v in idle], [0.0, 0.0], "a GPU running the job's process is not idle")
        # The job ends by itself: its labels vanish once the epilog ran.
        self.cluster.wait_for_state(job, "COMPLETED", timeout=60)
        self.wait_gone(job)
        self.assertEqual(self.gpus_of(job), [])
        self.assertEqual(self.series("gpuscope_job_info", hpc_job=job), [])

    def test_allocated_gpu_without_a_process_is_reported_without_process(self):
        job = self.cluster.sbatch("sleep 300", ["--gres=gpu:1"], user="alice", account="ml")
        self.addCleanup(lambda: self.cluster.run_client(["scancel", job], check=False))
        self.wait_running(job)
        self.after_next_full_cycle()
        idle = self.series("gpuscope_gpu_allocated_without_process", hpc_job=job)
        self.assertEqual(len(idle), 1)
        self.assertEqual(idle[0][1], 1.0, "allocated to the job, no GPU process: the wasted GPU")
        self.assertEqual(self.process_gpus_of(job), [])

    def test_cancelled_job_vanishes_and_two_jobs_of_two_users_are_told_apart(self):
        alice = self.submit_gpu_job(1)
        root = self.submit_gpu_job(1, user="root", account="ops")
        self.wait_running(alice)
        self.wait_running(root)
        self.after_next_full_cycle()
        self.assertEqual(len(self.gpus_of(alice)), 1)
        self.assertEqual(len(self.gpus_of(root)), 1)
        self.assertNotEqual(self.gpus_of(alice), self.gpus_of(root))
        self.assertEqual(self.series("gpuscope_job_info", hpc_job=root)[0][0]["user"], "root")
        self.assertEqual(self.series("gpuscope_job_info", hpc_job=root)[0][0]["account"], "ops")
        self.cluster.scancel(alice)
        self.cluster.wait_for_state(alice, "CANCELLED", timeout=60)
        self.wait_gone(alice)
        self.assertEqual(self.gpus_of(alice), [])
        self.assertEqual(len(self.gpus_of(root)), 1, "the other job keeps its labels")

    def test_job_array_tasks_are_separate_jobs_with_their_array_ids(self):
        array = self.cluster.sbatch(GPU_JOB % (self.device_map, 300), ["--gres=gpu:1", "--array=0-1"],
                                    user="alice", account="ml")
        self.addCleanup(lambda: self.cluster.run_client(["scancel", array], check=False))
        tasks = harness.wait_for(
            lambda: [j for j in self.cluster.squeue() if j["job_id"].startswith(array + "_")
                     and j["state"] == "RUNNING"] if len(
                [j for j in self.cluster.squeue() if j["job_id"].startswith(array + "_") and j["state"] == "RUNNING"]
            ) == 2 else None, 60, "both array tasks running")
        self.assertEqual(len(tasks), 2)
        # Array ids come from Slurm (the node prolog does not get them in 22.05): wait for the Slurm source.
        def array_infos():
            infos = [l for l, _ in self.series("gpuscope_job_info") if l.get("array_job_id") == array]
            return infos if len(infos) == 2 else None
        infos = harness.wait_for(array_infos, 30, "job_info of both array tasks with their array ids")
        self.assertEqual(sorted(l["array_task_id"] for l in infos), ["0", "1"])
        for l in infos:
            self.assertEqual(len(self.gpus_of(l["hpc_job"])), 1)

    def test_requeued_job_vanishes_and_comes_back_with_the_same_id(self):
        job = self.submit_gpu_job(1)
        self.wait_running(job)
        self.after_next_full_cycle()
        self.assertEqual(len(self.gpus_of(job)), 1)
        self.cluster.requeue(job)
        harness.wait_for(lambda: self.cluster.job_state(job) != "RUNNING", 30, "the requeue")
        self.wait_gone(job)
        self.assertEqual(self.gpus_of(job), [], "no labels while the job waits in the queue")
        # Slurm delays a requeued job's restart (BeginTime); let it start now.
        self.cluster.run_client(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=False)
        self.wait_running(job)
        self.after_next_full_cycle()
        self.assertEqual(len(self.gpus_of(job)), 1, "labels come back when the requeued job runs again")

    def test_zz_attribution_continues_while_slurmctld_is_down(self):
        job = self.submit_gpu_job(1)
        self.wait_running(job)
        self.after_next_full_cycle()
        self.cluster.stop_controller()
        try:
            harness.wait_for(lambda: self.series("gpuscope_attribution_slurm_up") and
                             self.series("gpuscope_attribution_slurm_up")[0][1] == 0.0, 60,
                             "the Slurm source to report the controller down")
            self.after_next_full_cycle()
            self.assertEqual(len(self.gpus_of(job)), 1, "mapping files and /proc keep the job's labels")
            info = self.series("gpuscope_job_info", hpc_job=job)
            self.assertEqual(info[0][0]["user"], "alice")
            self.assertEqual(info[0][0]["account"], "ml")
        finally:
            self.cluster.start_controller()


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

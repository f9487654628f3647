"""Component: gpuscope_gpu_allocated_idle of the real agent on the simulator means what its name says.

On sim/scenarios/h100-allocated-idle.yaml every GPU is allocated to a job whose process holds 30-71 GiB
and computes nothing (the notebook case): the GPUs are idle although a process runs on each, so
gpuscope_gpu_allocated_idle turns 1 once their utilisation has stayed below the threshold for the agent's
whole window (60 s), while gpuscope_gpu_allocated_without_process stays 0. On h100-training.yaml, the same
allocation with GPUs at work stays 0. The agent's device map for the Slurm prolog is checked on the way.

Usage: allocated_idle_test.py AGENT SIM_LIBRARY REPO_ROOT"""

import os
import re
import shutil
import sys
import tempfile
import unittest

AGENT, SIM, ROOT = sys.argv[1:4]
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402

WINDOW_SECONDS = 60  # AttributedCollector::kIdleWindow
IDLE_UTILISATION = 0.05  # AttributedCollector::kIdleUtilisation


def values(agent, family, job):
    """gpu -> value of `family` for `job` in one scrape."""
    out = {}
    for (name, labels), value in harness.parse_exposition(agent.metrics()).items():
        labels = dict(labels)
        if name == family and labels.get("hpc_job") == str(job):
            out[labels["gpu"]] = value
    return out


class AllocatedIdle(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="gpuscope-allocated-idle-")
        cls.addClassCleanup(shutil.rmtree, cls.work, True)
        cls.agents = {}
        for name, scenario, job in (("idle", "h100-allocated-idle.yaml", 4104), ("busy", "h100-training.yaml", 4101)):
            home = os.path.join(cls.work, name)
            jobs = os.path.join(home, "jobs")
            fleet.write_job_mapping(jobs, fleet.Job(job, "dave", "research", "interactive", name))
            agent = harness.Agent(AGENT, SIM, os.path.join(ROOT, "sim", "scenarios", scenario), extra_args=[
                "--hpc-job-mapping-dir", jobs, "--attribution.proc=false",
                "--attribution.device-map-file", os.path.join(home, "devices")])
            cls.addClassCleanup(agent.finish)
            cls.agents[name] = (agent, job, home)

    def test_a_gpu_held_by_a_process_that_computes_nothing_is_idle_after_the_window(self):
        agent, job, _ = self.agents["idle"]
        first = harness.wait_for(lambda: (lambda v: v if len(v) == 8 else None)(
            values(agent, "gpuscope_gpu_allocated_idle", job)), 30, "the allocated GPUs' idle series")
        self.assertEqual(set(first.values()), {0.0}, "not idle before a whole window was seen")
        self.assertEqual(set(values(agent, "gpuscope_gpu_allocated_without_process", job).values()), {0.0},
                         "each GPU runs the notebook's process")
        idle = harness.wait_for(lambda: (lambda v: v if set(v.values()) == {1.0} and len(v) == 8 else None)(
            values(agent, "gpuscope_gpu_allocated_idle", job)), WINDOW_SECONDS + 60,
            "every allocated GPU reported idle")
        self.assertEqual(sorted(idle), [str(i) for i in range(8)])
        self.assertEqual(set(values(agent, "gpuscope_gpu_allocated_without_process", job).values()), {0.0})

        busy, busy_job, _ = self.agents["busy"]
        working = values(busy, "gpuscope_gpu_allocated_idle", busy_job)
        self.assertEqual(len(working), 8)
        self.assertEqual(set(working.values()), {0.0}, "GPUs at work are never idle")

    def test_the_agent_and_the_mixin_alert_share_one_idle_threshold(self):
        with open(os.path.join(ROOT, "deploy", "mixin", "config.libsonnet")) as f:
            match = re.search(r"idleUtilisation:\s*([0-9.]+)", f.read())
        self.assertIsNotNone(match)
        self.assertEqual(float(match.group(1)), IDLE_UTILISATION)
        with open(os.path.join(ROOT, "src", "attribution", "attributed_collector.h")) as f:
            self.assertIn(f"kIdleUtilisation = {IDLE_UTILISATION}", f.read())

    def test_the_device_map_for_the_prolog_lists_every_gpu(self):
        agent, _, home = self.agents["idle"]
        path = os.path.join(home, "devices")
        harness.wait_for(lambda: os.path.exists(path), 30, "the device map")
        with open(path) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines[0].startswith("# nvml_index minor pci_bus_id uuid"))
        rows = [line.split() for line in lines[1:]]
        self.assertEqual([r[0] for r in rows], [str(i) for i in range(8)])
        uuids = {dict(labels)["gpu"]: dict(labels)["UUID"]
                 for (name, labels) in harness.parse_exposition(agent.metrics()) if name == "gpuscope_gpu_info"}
        for index, minor, bus, uuid in rows:
            self.assertEqual(uuids[index], uuid)
            self.assertTrue(bus.startswith("0000"), bus)
            self.assertTrue(minor.isdigit())


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

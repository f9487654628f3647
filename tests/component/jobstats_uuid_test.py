"""Component: Princeton jobstats mapping files named by UUID, end to end through the agent binary.

gpuscope-agent --once runs on the simulator's a100-mig scenario with a mapping directory laid out as
jobstats' prolog leaves /run/gpustat (tests/fixtures/mapping/README.md): on a MIG node one file per MIG
device named MIG-<uuid>, on a whole GPU the index file and GPU-<uuid>. The UUIDs are the simulator's, as
the agent itself reports them (gpuscope_gpu_up{UUID}, gpuscope_gpu_mig_instance_info{mig_uuid}); the
files must tie the MIG instance and the whole GPU to their jobs, with the uid from the file.

Usage: jobstats_uuid_test.py AGENT SIM_LIBRARY SCENARIO_DIR"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

AGENT, SIM, SCENARIOS = sys.argv[1:4]


def run_once(mapping_dir, device_map):
    env = dict(os.environ, GPUSCOPE_SIM_SCENARIO=os.path.join(SCENARIOS, "a100-mig.yaml"), GPUSCOPE_SIM_TIME="600")
    result = subprocess.run([AGENT, "--once", "--nvml.library", SIM, "--log.level", "warn",
                             "--attribution.proc=false", "--no-collector.host", "--no-collector.infiniband",
                             "--hpc-job-mapping-dir", mapping_dir, "--attribution.device-map-file", device_map],
                            env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"agent --once failed ({result.returncode}): {result.stderr}")
    return result.stdout


def series(text, name):
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{"):
            out.append(dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', line)))
    return out


class JobstatsUuidFiles(unittest.TestCase):
    def setUp(self):
        work = tempfile.mkdtemp(prefix="gpuscope-gpustat-")
        self.addCleanup(shutil.rmtree, work, True)
        self.dir = os.path.join(work, "gpustat")
        os.mkdir(self.dir)
        self.device_map = os.path.join(work, "devices")

    def write(self, name, content):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(content)

    def test_mig_and_gpu_uuid_files_tie_their_instance_and_gpu_to_the_job(self):
        before = run_once(self.dir, self.device_map)
        instance = next(s for s in series(before, "gpuscope_gpu_mig_instance_info")
                        if s["gpu"] == "1" and s.get("GPU_I_ID", "") == "14")
        mig_uuid = instance["mig_uuid"].split(",")[0]
        self.assertRegex(mig_uuid, r"^MIG-[0-9a-f-]{36}$")
        whole = next(s for s in series(before, "gpuscope_gpu_up") if s["gpu"] == "2")
        self.write(mig_uuid, "45916256 262563\n")
        self.write(whole["UUID"], "45916257 1000\n")

        after = run_once(self.dir, self.device_map)
        fb = [s for s in series(after, "DCGM_FI_DEV_FB_USED") if s["gpu"] == "1" and s.get("GPU_I_ID", "") == "14"]
        self.assertEqual([s.get("hpc_job") for s in fb], ["45916256"])
        other = [s for s in series(after, "DCGM_FI_DEV_FB_USED") if s["gpu"] == "1" and s.get("GPU_I_ID", "") != "14"]
        self.assertTrue(other)
        self.assertTrue(all(s.get("hpc_job", "") == "" for s in other), "only the MIG device's own instance is the job's")
        util = [s for s in series(after, "DCGM_FI_DEV_GPU_UTIL") if s["gpu"] == "2"]
        self.assertEqual([s.get("hpc_job") for s in util], ["45916257"])
        jobs = {s["hpc_job"]: s for s in series(after, "gpuscope_job_info")}
        self.assertEqual(jobs["45916256"]["uid"], "262563")
        self.assertEqual(jobs["45916257"]["uid"], "1000")
        self.assertIn("gpuscope_attribution_mapping_files_unresolved 0", after)

    def test_a_uuid_of_another_node_is_kept_unresolved_and_labels_nothing(self):
        self.write("GPU-00000000-0000-4000-8000-000000000000", "777 1000\n")
        text = run_once(self.dir, self.device_map)
        self.assertIn("gpuscope_attribution_mapping_files_unresolved 1", text)
        self.assertNotIn('hpc_job="777"', text)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

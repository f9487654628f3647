"""Integration: `gpuscope check` against real agents of the demo's simulated nodes, and its Slurm actions on
a real slurmctld/slurmd (tests/integration/slurm_harness.py).

Agents (tests/integration/fleet.py, as the demo runs them): gpu-node-01 (h100-training.yaml with the
InfiniBand fixture: two mlx5 ports Active, soft-RoCE Active, irdma0 Disabled on purpose) must pass with exit 0;
gpu-node-03 (h100-faults.yaml at ten times real speed: GPU 5's double-bit ECC error and XID 48 at 60 s, GPU 1
off the bus with XID 79 at 120 s) must fail with exit 2 for exactly those reasons, and not for the
application XIDs 13 and 31 of GPU 2; the NVLink CRC incident (its own agent at 50x) warns on the erroring
link, then fails on its XID 74; gpu-node-05 (h200-training.yaml with the host fixture whose GPU link
trained x8 of x16) warns with exit 1; gpu-node-08 (a100-dcgm.yaml, its agent on DCGM through the node's
nv-hostengine, at ten times real speed) fails on DCGM's memory health check of GPU 1 after its double-bit ECC
error and warns on GPU 2's corrupt InfoROM, and the nodes without DCGM have no `dcgm` finding; a port nobody
listens on fails with exit 2 and says so.

deploy/slurm/nhc/gpuscope.nhc, sourced by bash with NHC's die and log stood in for: dies with the first failing
finding on the faults node, logs the warnings of the PCIe node, passes the healthy one.

Slurm (root only, else those cases skip): --slurm-drain on the faults node drains the Slurm node with the
failing finding as reason (scontrol show node); a clean run with --slurm-resume-if-clean resumes it; a drain
someone else set is neither overwritten by a failing run nor resumed by a clean one. Then slurmd itself runs
deploy/slurm/healthcheck.sh as its HealthCheckProgram: the node drains while the agent it reads shows the
faults and is resumed once it shows the healthy node.

Usage: cli_check_test.py AGENT SIM_LIBRARY GPUSCOPE"""

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402
import slurm_harness  # noqa: E402

AGENT, SIM, GPUSCOPE = sys.argv[1:4]
HEALTHCHECK = os.path.join(fleet.ROOT, "deploy", "slurm", "healthcheck.sh")
# The faults node at 10x (the demo runs it at 2x) so its GPU 1 falls off the bus 12 s in, not 60 s; the DCGM
# node likewise (its DBE 6 s in, nv-hostengine restarted 9-10 s in), without the demo's profiling pause.
NODES = tuple(dataclasses.replace(n, speed=10, profiling_pause=None) if n.hostname in ("gpu-node-03", "gpu-node-08")
              else n for n in fleet.DEMO_NODES
              if n.hostname in ("gpu-node-01", "gpu-node-03", "gpu-node-05", "gpu-node-08"))


def check(url, *args, env=None):
    return subprocess.run([GPUSCOPE, "check", f"--agent.url={url}", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def failing(report):
    return sorted((f["check"], f["subject"]) for f in report["findings"] if f["status"] == "fail")


class GpuscopeCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = fleet.Fleet(AGENT, SIM, NODES)
        try:
            cls.urls = {host: agent.url for host, agent in cls.fleet.agents.items()}

            def faults_happened():
                done = check(cls.urls["gpu-node-03"], "--format=json")
                report = json.loads(done.stdout)
                lost = any(f["check"] == "gpus" and f["subject"].startswith("GPU 1 ") for f in report["findings"])
                xids = {f["message"].split(" ")[1] for f in report["findings"] if f["check"] == "xid"}
                return report if lost and {"48", "79"} <= xids else None

            # GPU 1 falls off the bus last (120 s simulated, 12 s real); its NVML state and its XID 79 (NVML
            # event, kernel log) reach the agent separately.
            harness.wait_for(faults_happened, 150, "gpu-node-03's GPU 1 to fall off the bus with XID 79")
        except BaseException:
            cls.fleet.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.fleet.stop()

    def test_healthy_node_passes_every_check_with_exit_0(self):
        done = check(self.urls["gpu-node-01"], "--expect-gpus=8")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual(lines[-1], "check: pass (0 failing, 0 warning, 11 passing)")
        self.assertTrue(all(line.startswith("PASS  ") for line in lines[:-1]), done.stdout)
        self.assertIn("PASS  gpus       8 GPUs present (8 expected), all answering", lines)
        self.assertIn("PASS  infiniband 3 ports Active; irdma0 port 1 disabled", lines)

    def test_faults_node_fails_with_exit_2_for_the_right_reasons(self):
        done = check(self.urls["gpu-node-03"], "--format=json")
        self.assertEqual(done.returncode, 2, done.stderr)
        report = json.loads(done.stdout)
        self.assertEqual(report["verdict"], "fail")
        self.assertEqual(report["exit_code"], 2)
        found = failing(report)
        uuid = {f["subject"].split(" ")[1]: f["subject"] for f in report["findings"] if f["subject"]}
        # What the scenario did, as the agent exports it, read back here independently of the check.
        metrics = harness.http_get(self.urls["gpu-node-03"] + "/metrics")[2].decode()
        self.assertRegex(metrics, r'gpuscope_gpu_up\{gpu="1",[^}]*\} 0')
        self.assertRegex(metrics, r'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL\{gpu="5",[^}]*\} [1-9]')
        self.assertIn(("gpus", uuid["1"]), found)  # lost
        self.assertIn(("ecc", uuid["5"]), found)
        xids = {f["message"].split(" ")[1]: f for f in report["findings"] if f["check"] == "xid"}
        self.assertEqual(xids["79"]["status"], "fail")
        self.assertIn("catalog action: reboot", xids["79"]["message"])
        self.assertEqual(xids["48"]["status"], "fail")
        self.assertIn("catalog action: reset_gpu", xids["48"]["message"])
        # The application XIDs of GPU 2 ask for no reset: they do not fail the node.
        self.assertRegex(metrics, r'gpuscope_xid_errors_total\{gpu="2",[^}]*xid="13",action="restart_app"[^}]*\} 1')
        self.assertFalse([f for f in report["findings"] if f["status"] != "pass" and f["subject"].startswith("GPU 2 ")])
        self.assertEqual({c for c, _ in found} - {"gpus", "ecc", "xid", "memory"}, set(), found)
        for f in report["findings"]:
            if f["status"] == "fail":
                self.assertTrue(f["runbook"].startswith("https://runbooks.example.invalid/gpuscope/"), f)
        ecc = [f for f in report["findings"] if f["check"] == "ecc"][0]
        self.assertTrue(ecc["runbook"].endswith("/GpuEccDoubleBitError.md"))

    def test_dcgm_health_failure_fails_and_warning_warns_naming_gpu_and_system(self):
        def dcgm_findings():
            # The health series vanish while the agent reconnects to the restarted nv-hostengine.
            done = check(self.urls["gpu-node-08"], "--format=json")
            report = json.loads(done.stdout)
            found = [f for f in report["findings"] if f["check"] == "dcgm"]
            return (done, report, found) if any(f["status"] == "fail" for f in found) else None

        done, report, found = harness.wait_for(dcgm_findings, 60, "gpu-node-08's DCGM memory health failure")
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertEqual([(f["status"], f["subject"].split(" ")[:2], f["message"]) for f in found],
                         [("fail", ["GPU", "1"], "DCGM's memory health check fails"),
                          ("warn", ["GPU", "2"], "DCGM's inforom health check warns")])
        self.assertTrue(found[0]["runbook"].endswith("/GpuDcgmHealthFailure.md"), found[0])
        self.assertTrue(found[1]["runbook"].endswith("/GpuDcgmHealthWarning.md"), found[1])
        # The same GPU's double-bit ECC error, from NVML, fails the ecc check too.
        self.assertIn(("ecc", found[0]["subject"]), failing(report))
        # Nodes whose agents do not use DCGM say nothing about it.
        for host in ("gpu-node-01", "gpu-node-05"):
            report = json.loads(check(self.urls[host], "--format=json").stdout)
            self.assertEqual([f for f in report["findings"] if f["check"] == "dcgm"], [], host)

    def test_narrow_pcie_link_warns_with_exit_1(self):
        done = check(self.urls["gpu-node-05"])
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        warnings = [line for line in done.stdout.splitlines() if line.startswith("WARN")]
        self.assertTrue(warnings, done.stdout)
        self.assertTrue(all(line.startswith("WARN  pcie") for line in warnings), done.stdout)
        self.assertIn("GpuPcieLinkDegraded.md", warnings[0])

    def test_nvlink_crc_incident_warns_then_fails_on_its_xid_74(self):
        """h100-nvlink-crc-incident.yaml at 50x: link 7 of GPU 3 takes CRC errors from 600 s (a warning),
        the driver reports XID 74 (catalog action reset_gpu) at 900 s (a failure)."""
        agent = harness.Agent(AGENT, SIM, os.path.join(fleet.SCENARIOS, "h100-nvlink-crc-incident.yaml"),
                              env={"GPUSCOPE_SIM_SPEED": "50"})
        try:
            def report_with(status):
                done = check(agent.url, "--format=json")
                report = json.loads(done.stdout)
                return report if report["verdict"] == status and report["exit_code"] == done.returncode else None

            warned = harness.wait_for(lambda: report_with("warn"), 40, "the CRC errors to warn")
            bad = [f for f in warned["findings"] if f["status"] != "pass"]
            self.assertEqual([(f["check"], f["subject"].split(" ")[1], f["subject"].split(" ")[-1]) for f in bad],
                             [("nvlink", "3", "7")])
            self.assertTrue(bad[0]["runbook"].endswith("/GpuNvlinkErrorsRising.md"))
            failed = harness.wait_for(lambda: report_with("fail"), 40, "XID 74 to fail the node")
            xid = [f for f in failed["findings"] if f["status"] == "fail"]
            self.assertEqual(len(xid), 1, xid)
            self.assertRegex(xid[0]["message"], r"^XID 74 x1 \(catalog action: reset_gpu\)")
            self.assertTrue(xid[0]["subject"].startswith("GPU 3 "))
        finally:
            agent.stop()

    def test_unreachable_agent_fails_with_the_reason(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound, never listening: connections are refused
            done = check(f"http://127.0.0.1:{port}")
        self.assertEqual(done.returncode, 2)
        self.assertRegex(done.stdout, rf"FAIL  agent +cannot read http://127\.0\.0\.1:{port}: .+")
        self.assertTrue(done.stdout.endswith("check: fail (1 failing, 0 warning, 0 passing)\n"), done.stdout)

    def test_nhc_check_dies_with_the_first_failing_finding_and_logs_warnings(self):
        """deploy/slurm/nhc/gpuscope.nhc sourced by bash as NHC sources its scripts (NHC itself is not packaged
        in Debian: its die and log are stood in for by functions that print their arguments)."""
        nhc = os.path.join(fleet.ROOT, "deploy", "slurm", "nhc", "gpuscope.nhc")

        def run(host, *args):
            script = ('die() { echo "die $1: $2"; return "$1"; }; log() { echo "log: $*"; }; . "$0"; '
                      'check_gpuscope "$@"; echo "status $?"')
            env = dict(os.environ, GPUSCOPE=os.path.abspath(GPUSCOPE), GPUSCOPE_AGENT_URL=self.urls[host])
            return subprocess.run(["bash", "-c", script, nhc, *args], capture_output=True, text=True, env=env,
                                  timeout=60).stdout

        self.assertEqual(run("gpu-node-01", "--expect-gpus=8"), "status 0\n")
        out = run("gpu-node-03").splitlines()
        self.assertRegex(out[0], r"^die 1: gpuscope: gpus GPU 1 \(GPU-[0-9a-f-]+\): does not answer NVML")
        self.assertNotIn("https://", out[0])
        self.assertEqual(out[1], "status 1")
        out = run("gpu-node-05").splitlines()
        self.assertTrue(out[0].startswith("log: check_gpuscope: WARN  pcie"), out)
        self.assertEqual(out[1], "status 0")

    @unittest.skipUnless(slurm_harness.slurm_available(), "needs root and the Slurm packages")
    def test_slurm_drain_and_resume_if_clean_on_a_real_slurmd(self):
        with slurm_harness.SlurmCluster() as cluster:
            node = cluster.node

            def show():
                line = cluster.run_client(["scontrol", "show", "node", "-o", node]).stdout
                return slurm_harness.parse_scontrol_record(line)

            def run(host, *flags):
                return check(self.urls[host], f"--node-name={node}", *flags, env=cluster.env)

            harness.wait_for(lambda: "IDLE" in show().get("State", ""), 30, "the node to be idle")
            done = run("gpu-node-03", "--slurm-drain", "--slurm-resume-if-clean")
            self.assertEqual(done.returncode, 2, done.stderr)
            record = show()
            self.assertIn("DRAIN", record["State"])
            first_fail = [line for line in done.stdout.splitlines() if line.startswith("FAIL")][0]
            check_name, rest = first_fail[6:17].strip(), first_fail[17:]
            self.assertTrue(record["Reason"].startswith(f"gpuscope: {check_name} {rest[:40]}"), record["Reason"])
            self.assertIn(f"slurm: drained node {node} (reason: gpuscope: ", done.stdout)

            # A clean run resumes the node gpuscope drained.
            done = run("gpu-node-01", "--slurm-drain", "--slurm-resume-if-clean")
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertIn(f"slurm: resumed node {node}", done.stdout)
            self.assertNotIn("DRAIN", show()["State"])

            # Someone else's drain: a failing run keeps its reason, a clean run does not resume it.
            cluster.run_client(["scontrol", "update", f"nodename={node}", "state=drain",
                                "reason=fan swap, ticket 77"])
            done = run("gpu-node-03", "--slurm-drain")
            self.assertEqual(done.returncode, 2)
            self.assertIn("already drained by someone else (reason: fan swap, ticket 77); left as is", done.stdout)
            self.assertTrue(show()["Reason"].startswith("fan swap, ticket 77"), show())
            done = run("gpu-node-01", "--slurm-resume-if-clean", "--format=json")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(json.loads(done.stdout)["slurm"]["action"], "none")
            record = show()
            self.assertIn("DRAIN", record["State"])
            self.assertTrue(record["Reason"].startswith("fan swap, ticket 77"), record)

    @unittest.skipUnless(slurm_harness.slurm_available(), "needs root and the Slurm packages")
    def test_slurmd_runs_the_shipped_health_check_program_which_drains_and_resumes(self):
        """deploy/slurm/healthcheck.sh as slurmd's HealthCheckProgram, every 2 s: the node drains while its
        agent shows the faults and is resumed once it shows a healthy node again."""
        work = tempfile.mkdtemp(prefix="gpuscope-healthcheck-")
        try:
            url_file = os.path.join(work, "agent-url")
            with open(url_file, "w") as f:
                f.write(self.urls["gpu-node-01"])
            # slurmd runs the program with almost no environment: a wrapper names the defaults file, which
            # brings SLURM_CONF (a real node has /etc/slurm/slurm.conf) once the cluster has written it.
            conf_file = os.path.join(work, "slurm-conf")
            defaults = os.path.join(work, "defaults")
            with open(defaults, "w") as f:
                f.write(f"GPUSCOPE={os.path.abspath(GPUSCOPE)}\nGPUSCOPE_AGENT_URL=$(cat {url_file})\n"
                        "GPUSCOPE_SYSLOG=0\n"
                        f"[ -r {conf_file} ] && SLURM_CONF=$(cat {conf_file}) && export SLURM_CONF\n")
            wrapper = os.path.join(work, "healthcheck")
            with open(wrapper, "w") as f:
                f.write(f"#!/bin/sh\nexport GPUSCOPE_CHECK_DEFAULTS={defaults}\nexec {HEALTHCHECK}\n")
            os.chmod(wrapper, 0o755)
            cluster = slurm_harness.SlurmCluster(
                extra_conf=f"HealthCheckProgram={wrapper}\nHealthCheckInterval=2\n")
            with cluster:
                with open(conf_file, "w") as f:
                    f.write(cluster.conf_path)

                def state():
                    line = cluster.run_client(["scontrol", "show", "node", "-o", cluster.node]).stdout
                    return slurm_harness.parse_scontrol_record(line)

                with open(url_file, "w") as f:
                    f.write(self.urls["gpu-node-03"])
                def drained():
                    record = state()
                    return record if "DRAIN" in record["State"] else None

                record = harness.wait_for(drained, 30, "slurmd's health check to drain the node")
                self.assertTrue(record.get("Reason", "").startswith("gpuscope: gpus GPU 1 "), record)
                with open(url_file, "w") as f:
                    f.write(self.urls["gpu-node-01"])
                harness.wait_for(lambda: not drained(), 30, "slurmd's health check to resume the node")
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest_main.main(sys.argv[:1])

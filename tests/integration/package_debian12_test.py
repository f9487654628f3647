"""Integration: the .deb in a clean Debian 12 root (debootstrap, scripts/make-test-root.sh) booted with
systemd-nspawn, where the real systemd runs the installed unit; the simulator stands in for NVML (a drop-in
sets GPUSCOPE_SIM_SCENARIO, /etc/gpuscope/agent.d/ the library and the port, as configuration management
would). In order:

1. Install (apt-get, the dependencies from Debian's archive): the user, /var/lib/gpuscope (0750) and
   /run/gpuscope are made, the unit is enabled and started (Type=notify: active once /metrics answers),
   the agent runs as gpuscope with no capability, no new privileges and a seccomp filter, serves the
   simulator's GPUs, and logs to the journal in its structured form; `systemd-analyze verify` (man page
   check included) passes and `systemd-analyze security` gives the figure deploy/systemd/README.md states.
2. The kernel log: an XID line written to the host's /dev/kmsg reaches the container's journal as a kernel
   message and the agent counts it, with no capability (the journal group only).
3. Job files: the packaged Slurm prolog writes the job's mapping files from the agent's device map; the
   agent labels the job's GPUs; the epilog takes them back.
4. Nothing more: in the agent's own mount namespace and as its user, /etc, /usr and /run/gpuscope/jobs are
   not writable, /home and /root are hidden, /tmp is its own; /var/lib/gpuscope and /run/gpuscope are
   writable. /dev/kmsg is refused without the kmsg.conf drop-in and read with it (CAP_SYSLOG, since
   kernel.dmesg_restrict=1); another user's GPU process is attributed from its environ with
   proc-environ.conf (CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE), which hides /etc/shadow from the agent.
5. Upgrade, from an older package whose default agent.yml differs, with a Loki sink whose receiver is down
   and three XID events queued: the edited agent.yml is kept (--force-confold, the new default beside it
   as agent.yml.dpkg-dist), the service is restarted into the new version, the queued events survive it
   and reach VictoriaLogs once it starts.
6. Removal keeps /var/lib/gpuscope (with the queue), /etc/gpuscope and the user; purge deletes the data and
   the configuration the package owns, and leaves the administrator's own agent.d file.

Usage: package_debian12_test.py PACKAGE_DIR VERSION ROOT_TARBALL SIM_LIBRARY SCENARIO_DIR VICTORIALOGS"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import booted_root  # noqa: E402
import harness  # noqa: E402
import peers  # noqa: E402
import unittest_main  # noqa: E402

PACKAGES, VERSION, ROOT_TARBALL, SIM, SCENARIOS, VICTORIALOGS = sys.argv[1:7]
OLD_VERSION = VERSION + "~pkgtest0"
SIM_DIR = "/opt/gpuscope-test"
DROPINS = "/etc/systemd/system/gpuscope-agent.service.d"
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "systemd", "README.md")
CAP_SYSLOG = 1 << 34
CAP_SYS_PTRACE = 1 << 19
CAP_DAC_READ_SEARCH = 1 << 2


def make_old_package(new_deb, workdir):
    """The same package as an older version whose default agent.yml differs by a line, as a previous
    release's would: the upgrade then meets a conffile both sides changed."""
    tree = os.path.join(workdir, "old")
    subprocess.run(["dpkg-deb", "-R", new_deb, tree], check=True)
    control = os.path.join(tree, "DEBIAN", "control")
    with open(control) as f:
        text = f.read()
    with open(control, "w") as f:
        f.write(re.sub(r"^Version: .*$", f"Version: {OLD_VERSION}", text, flags=re.M))
    config = os.path.join(tree, "etc", "gpuscope", "agent.yml")
    with open(config) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write("# The previous release's default.\n" + text)
    md5sums = os.path.join(tree, "DEBIAN", "md5sums")
    digest = subprocess.run(["md5sum", "etc/gpuscope/agent.yml"], cwd=tree, check=True, capture_output=True,
                            text=True).stdout
    with open(md5sums) as f:
        lines = [line for line in f if not line.rstrip().endswith("etc/gpuscope/agent.yml")]
    with open(md5sums, "w") as f:
        f.writelines(lines + [digest])
    old = os.path.join(workdir, f"gpuscope_{OLD_VERSION}_amd64.deb")
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", tree, old], check=True, capture_output=True)
    return old


class Endpoint:
    """The installed agent's /metrics on the host's loopback (the container shares the network)."""

    def __init__(self, port):
        self.url = f"http://127.0.0.1:{port}"

    def metrics(self):
        return harness.http_get(self.url + "/metrics")[2].decode()


@unittest.skipUnless(os.geteuid() == 0, "booting a root with systemd-nspawn needs root")
class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="gpuscope-pkgtest-", dir="/var/tmp")
        cls.new_deb = os.path.join(PACKAGES, f"gpuscope_{VERSION}_amd64.deb")
        cls.old_deb = make_old_package(cls.new_deb, cls.work)
        cls.port = harness.free_port()
        cls.endpoint = Endpoint(cls.port)
        cls.logs = peers.VictoriaLogs(VICTORIALOGS, start=False)
        # apt's downloads are kept beside the root tarball, so that later runs fetch nothing.
        apt_cache = os.path.join(os.path.dirname(ROOT_TARBALL), "apt-archives")
        os.makedirs(os.path.join(apt_cache, "partial"), exist_ok=True)
        packages = os.path.join(cls.work, "packages")
        os.makedirs(packages)
        for deb in (cls.new_deb, cls.old_deb):
            shutil.copy(deb, packages)
        with open(os.path.join(SCENARIOS, "h100-training.yaml")) as f:
            scenario = f.read()
        # GPU processes are the container's real processes marked in their environment (sim/README.md).
        scenario += "\nproc_processes: {marker: GPUSCOPE_SIM_GPU_PROCESS, memory_gib: 2}\n"

        def prepare(root):
            # Before boot: on the root's disk.
            def write(path, text):
                os.makedirs(os.path.dirname(root.path(path)), exist_ok=True)
                with open(root.path(path), "w") as f:
                    f.write(text)
            os.makedirs(root.path(SIM_DIR))
            shutil.copy(SIM, root.path(SIM_DIR + "/libnvidia-ml.so.1"))
            write(SIM_DIR + "/node.yaml", scenario)
            write(DROPINS + "/50-simulator.conf",
                  f"[Service]\nEnvironment=GPUSCOPE_SIM_SCENARIO={SIM_DIR}/node.yaml\n")
            write("/etc/gpuscope/agent.d/50-test.yml",
                  f"# The simulator's NVML and a free port: what a test site's configuration management adds.\n"
                  f"nvml: {{library: {SIM_DIR}/libnvidia-ml.so.1}}\n"
                  f"web: {{listen_address: \"127.0.0.1:{cls.port}\"}}\n")

        cls.root = booted_root.BootedRoot(
            ROOT_TARBALL, binds=[(packages, "/packages", True), (apt_cache, "/var/cache/apt/archives", False)],
            prepare=prepare)
        cls.root.run("useradd", "--create-home", "--uid", "1001", "alice")
        cls.root.write("/home/alice/secret", "alice's\n")
        cls.root.write("/root/secret", "root's\n")

    @classmethod
    def tearDownClass(cls):
        cls.root.stop()
        cls.logs.stop()
        cls.logs.cleanup()
        shutil.rmtree(cls.work, ignore_errors=True)

    # --- helpers -------------------------------------------------------------------------------------------

    def apt(self, *args):
        return self.root.run("apt-get", "-y", "-q", "--no-install-recommends", *args,
                             env={"DEBIAN_FRONTEND": "noninteractive"}, timeout=600)

    def show(self, *properties):
        out = self.root.run("systemctl", "show", "gpuscope-agent", *[f"--property={p}" for p in properties])
        return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)

    def restart(self):
        self.root.run("systemctl", "daemon-reload")
        self.root.run("systemctl", "restart", "gpuscope-agent")  # returns once READY=1 came (Type=notify)
        self.assertEqual(self.show("ActiveState")["ActiveState"], "active")

    def metric(self, name, **labels):
        return harness.metric(self.endpoint, name, **labels)

    def wait_metric(self, name, predicate, what, timeout=60, **labels):
        return harness.wait_for(lambda: predicate(self.metric(name, **labels)), timeout, what)

    def status(self):
        """/proc/<MainPID>/status of the agent, as {field: value}."""
        pid = self.show("MainPID")["MainPID"]
        text = self.root.run("cat", f"/proc/{pid}/status").stdout
        return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)

    def gpu_bus(self, gpu):
        for (name, labels), _ in harness.parse_exposition(self.endpoint.metrics()).items():
            labels = dict(labels)
            if name == "DCGM_FI_DEV_GPU_UTIL" and labels.get("gpu") == gpu:
                domain, bus, device = re.match(r"^0*([0-9A-Fa-f]{1,4}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})",
                                               labels["pci_bus_id"]).groups()
                return f"{int(domain, 16):04x}:{bus}:{device}"
        raise AssertionError(f"no GPU {gpu} in the exposition")

    def write_xid(self, marker, code=13):
        """An XID line into the host's kernel log, as the NVIDIA driver prints it."""
        line = (f"<3>NVRM: Xid (PCI:{self.gpu_bus('0')}): {code}, pid={marker}, name=pkgtest{marker}, "
                "Graphics Exception: ESR 0x404490=0x80000002 (gpuscope package test)\n")
        with open("/dev/kmsg", "w") as kmsg:
            kmsg.write(line)

    def in_agent_namespace(self, script):
        """`script` (sh) in the agent's mount namespace as its user and group: what the agent itself may
        see and do with its files."""
        pid = self.show("MainPID")["MainPID"]
        user = self.root.run("id", "-u", "gpuscope").stdout.strip()
        group = self.root.run("id", "-g", "gpuscope").stdout.strip()
        return self.root.run("nsenter", "--target", pid, "--mount", "--setuid", user, "--setgid", group, "--",
                             "sh", "-c", script, check=False).stdout

    # --- 1. install ----------------------------------------------------------------------------------------

    def test_1_install_starts_the_hardened_service(self):
        self.apt("install", f"/packages/gpuscope_{OLD_VERSION}_amd64.deb")
        self.assertEqual(self.root.run("systemctl", "is-enabled", "gpuscope-agent").stdout.strip(), "enabled")
        harness.wait_for(lambda: self.show("ActiveState")["ActiveState"] == "active", 60, "the service active")
        unit = self.show("Type", "User", "StatusText", "NRestarts", "SubState")
        self.assertEqual(unit["Type"], "notify")
        self.assertEqual(unit["User"], "gpuscope")
        self.assertEqual(unit["StatusText"], f"serving /metrics on 127.0.0.1:{self.port}")
        self.assertEqual(unit["NRestarts"], "0")

        # The simulator's eight GPUs, as the installed agent serves them.
        self.assertEqual(len([1 for (name, _), _ in harness.parse_exposition(self.endpoint.metrics()).items()
                              if name == "DCGM_FI_DEV_GPU_UTIL"]), 8)
        self.assertEqual(harness.http_get(self.endpoint.url + "/readyz")[0], 200)

        # The process: its own user, the journal's group, no capability, no new privileges, seccomp.
        passwd = self.root.run("getent", "passwd", "gpuscope").stdout.strip().split(":")
        self.assertEqual(passwd[5:], ["/var/lib/gpuscope", "/usr/sbin/nologin"])
        journal_gid = self.root.run("getent", "group", "systemd-journal").stdout.split(":")[2]
        status = self.status()
        self.assertEqual(status["Uid"].split()[0], passwd[2])
        self.assertIn(journal_gid, status["Groups"].split())
        for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(int(status[field], 16), 0, field)
        self.assertEqual(status["NoNewPrivs"].strip(), "1")
        self.assertEqual(status["Seccomp"].strip(), "2")

        # The directories the package and the agent made.
        stat = self.root.run("stat", "-c", "%U %G %a %n", "/var/lib/gpuscope", "/run/gpuscope",
                             "/run/gpuscope/jobs", "/run/gpuscope/devices").stdout.splitlines()
        self.assertEqual(stat, ["gpuscope gpuscope 750 /var/lib/gpuscope", "gpuscope gpuscope 755 /run/gpuscope",
                                "root root 755 /run/gpuscope/jobs", "gpuscope gpuscope 600 /run/gpuscope/devices"])
        self.assertEqual(len([line for line in self.root.read("/run/gpuscope/devices").splitlines()
                              if line and not line.startswith("#")]), 8)

        # systemd's own checks, on the installed unit with its man page.
        verify = self.root.run("systemd-analyze", "verify", "gpuscope-agent.service", check=False)
        self.assertEqual((verify.returncode, verify.stdout + verify.stderr), (0, ""))
        security = self.root.run("systemd-analyze", "security", "--no-pager", "gpuscope-agent.service").stdout
        measured = re.search(r"Overall exposure level for gpuscope-agent.service: (\d\.\d) OK", security).group(1)
        with open(README) as f:
            stated = re.search(r"^\| `gpuscope-agent.service` as installed \| (\d\.\d) OK \|$", f.read(), re.M).group(1)
        print(f"systemd-analyze security of the installed unit: {measured}")
        self.assertEqual(measured, stated)

        # The journal, in its structured form: the start-up line with its fields as journal fields.
        entries = [json.loads(line) for line in self.root.run(
            "journalctl", "-u", "gpuscope-agent", "-o", "json", "--no-pager").stdout.splitlines()]
        listening = [e for e in entries if e.get("MESSAGE") == "gpuscope-agent listening"]
        self.assertTrue(listening, entries[-5:])
        self.assertEqual({k: listening[-1].get(k) for k in ("PRIORITY", "SYSLOG_IDENTIFIER", "GPUSCOPE_LEVEL",
                                                             "PORT", "ADDRESS", "VERSION")},
                         {"PRIORITY": "6", "SYSLOG_IDENTIFIER": "gpuscope-agent", "GPUSCOPE_LEVEL": "info",
                          "PORT": str(self.port), "ADDRESS": f"127.0.0.1:{self.port}", "VERSION": VERSION})

    # --- 2. the kernel log through the journal ---------------------------------------------------------------

    def test_2_kernel_log_reaches_the_agent_through_the_journal(self):
        before = self.metric("gpuscope_xid_errors_total", xid="13") or 0
        self.write_xid(marker=700001)
        self.wait_metric("gpuscope_xid_errors_total", lambda v: v == before + 1, "the XID counted", xid="13")
        self.wait_metric("gpuscope_events_total", lambda v: (v or 0) >= 1, "the event counted by source",
                         source="journal", **{"class": "xid"})

    # --- 3. job files from the packaged prolog ---------------------------------------------------------------

    def test_3_the_packaged_prolog_ties_gpus_to_the_job(self):
        slurm = {"SLURM_JOB_ID": "4242", "SLURM_JOB_GPUS": "0,1", "SLURM_JOB_USER": "alice",
                 "SLURM_JOB_UID": "1001", "SLURM_JOB_ACCOUNT": "research", "SLURM_JOB_PARTITION": "gpu",
                 "GPUSCOPE_SYSLOG": "0"}
        self.root.run("bash", "/usr/share/gpuscope/slurm/prolog.sh", env=slurm)
        self.assertIn("job_id=4242", self.root.read("/run/gpuscope/jobs/gpuscope-job.4242"))
        self.wait_metric("DCGM_FI_DEV_GPU_UTIL", lambda v: v is not None, "GPU 1 labelled with job 4242",
                         gpu="1", hpc_job="4242")
        self.assertIsNone(self.metric("DCGM_FI_DEV_GPU_UTIL", gpu="2", hpc_job="4242"))
        self.root.run("bash", "/usr/share/gpuscope/slurm/epilog.sh", env=slurm)
        self.wait_metric("DCGM_FI_DEV_GPU_UTIL", lambda v: v is None, "job 4242's label gone", gpu="1",
                         hpc_job="4242")

    # --- 4. nothing more -------------------------------------------------------------------------------------

    def test_4_the_sandbox_allows_what_the_features_need_and_nothing_more(self):
        self.root.write("/tmp/outside", "the container's /tmp\n")
        probe = """
try() { if sh -c "$2" 2>/dev/null; then echo "$1 allowed"; else echo "$1 refused"; fi; }
try write-etc 'echo x > /etc/gpuscope/probe'
try write-usr 'echo x > /usr/probe'
try write-jobs 'echo x > /run/gpuscope/jobs/probe'
try read-home 'cat /home/alice/secret'
try read-root 'cat /root/secret'
try see-others-tmp 'test -e /tmp/outside'
try read-config 'cat /etc/gpuscope/agent.yml >/dev/null'
try write-state 'echo x > /var/lib/gpuscope/probe && rm /var/lib/gpuscope/probe'
try write-run 'echo x > /run/gpuscope/probe && rm /run/gpuscope/probe'
"""
        self.assertEqual(self.in_agent_namespace(probe).split("\n"),
                         ["write-etc refused", "write-usr refused", "write-jobs refused", "read-home refused",
                          "read-root refused", "see-others-tmp refused", "read-config allowed",
                          "write-state allowed", "write-run allowed", ""])

        # /dev/kmsg: refused to the base unit, read with the kmsg.conf drop-in.
        shutil.copy(self.root.path("/usr/share/gpuscope/examples/kmsg.yml"),
                    self.root.path("/etc/gpuscope/agent.d/60-kmsg.yml"))
        self.restart()
        self.wait_metric("gpuscope_event_source_errors_total", lambda v: (v or 0) > 0,
                         "the kmsg source refused", source="kmsg")
        shutil.copy(self.root.path("/usr/share/gpuscope/systemd/kmsg.conf"), self.root.path(DROPINS + "/kmsg.conf"))
        self.restart()
        self.assertEqual(int(self.status()["CapEff"], 16), CAP_SYSLOG)
        before = self.metric("gpuscope_xid_errors_total", xid="13") or 0
        self.write_xid(marker=700002)
        self.wait_metric("gpuscope_xid_errors_total", lambda v: v == before + 1, "the XID read from /dev/kmsg",
                         xid="13")
        self.wait_metric("gpuscope_events_total", lambda v: (v or 0) >= 1, "the event counted by source",
                         source="kmsg", **{"class": "xid"})
        self.assertEqual(self.metric("gpuscope_event_source_errors_total", source="kmsg") or 0, 0)
        os.unlink(self.root.path("/etc/gpuscope/agent.d/60-kmsg.yml"))
        os.unlink(self.root.path(DROPINS + "/kmsg.conf"))

        # Another user's GPU process: its environ (rank, job) read with the proc-environ.conf drop-in.
        shutil.copy(self.root.path("/usr/share/gpuscope/systemd/proc-environ.conf"),
                    self.root.path(DROPINS + "/proc-environ.conf"))
        self.restart()
        self.assertEqual(int(self.status()["CapEff"], 16), CAP_SYS_PTRACE | CAP_DAC_READ_SEARCH)
        # What CAP_DAC_READ_SEARCH could read, the drop-in takes out of the agent's view.
        pid = self.show("MainPID")["MainPID"]
        self.assertNotEqual(self.root.read("/etc/shadow"), "")
        self.assertEqual(self.root.run("nsenter", "--target", pid, "--mount", "--", "cat", "/etc/shadow").stdout, "")
        self.root.run("systemd-run", "--unit=alice-rank", "--uid=alice", "--setenv=GPUSCOPE_SIM_GPU_PROCESS=1",
                      "--setenv=CUDA_VISIBLE_DEVICES=2", "--setenv=SLURM_JOB_ID=4343", "--setenv=SLURM_PROCID=5",
                      "/bin/sleep", "600")
        self.wait_metric("DCGM_FI_DEV_GPU_UTIL", lambda v: v is not None, "GPU 2 labelled with alice's job",
                         gpu="2", hpc_job="4343")
        self.assertGreaterEqual(self.metric("gpuscope_attribution_proc_environ_total", result="ok"), 1)
        self.root.run("systemctl", "stop", "alice-rank")
        os.unlink(self.root.path(DROPINS + "/proc-environ.conf"))
        self.restart()
        self.assertEqual(int(self.status()["CapEff"], 16), 0)

    # --- 5. upgrade ------------------------------------------------------------------------------------------

    def test_5_upgrade_keeps_the_edited_config_and_the_queued_events_and_restarts(self):
        self.root.write("/etc/gpuscope/agent.d/70-sink.yml",
                        f"sinks: {{loki: {{url: \"{self.logs.loki_push_url()}\"}}}}\n")
        with open(self.root.path("/etc/gpuscope/agent.yml"), "a") as f:
            f.write("\n# Edited by the site.\ngpu:\n  hostname: pkg-node-edited\n")
        self.restart()
        self.assertIsNotNone(self.metric("DCGM_FI_DEV_GPU_UTIL", gpu="0", Hostname="pkg-node-edited"))
        markers = [700011, 700012, 700013]
        for marker in markers:
            self.write_xid(marker)
        # VictoriaLogs is not running: the three events wait in the durable queue.
        self.wait_metric("gpuscope_sink_failed_requests_total", lambda v: (v or 0) >= 1, "a failed push",
                         sink="loki")
        self.wait_metric("gpuscope_queue_records", lambda v: (v or 0) >= 3, "three queued events", queue="events")
        before = self.show("MainPID", "InvocationID")

        self.apt("install", "-o", "Dpkg::Options::=--force-confold", f"/packages/gpuscope_{VERSION}_amd64.deb")
        self.assertEqual(self.root.run("dpkg-query", "-W", "-f=${Version}", "gpuscope").stdout, VERSION)
        config = self.root.read("/etc/gpuscope/agent.yml")
        self.assertIn("hostname: pkg-node-edited", config)
        self.assertTrue(config.startswith("# The previous release's default.\n"))
        with open(os.path.join(self.work, "old", "etc", "gpuscope", "agent.yml")) as f:
            old_default = f.read()
        self.assertEqual(self.root.read("/etc/gpuscope/agent.yml.dpkg-dist"),
                         old_default.removeprefix("# The previous release's default.\n"))
        harness.wait_for(lambda: self.show("ActiveState")["ActiveState"] == "active", 60, "the service active")
        after = self.show("MainPID", "InvocationID")
        self.assertNotEqual(after["InvocationID"], before["InvocationID"])  # restarted, not left running
        self.assertNotEqual(after["MainPID"], before["MainPID"])
        self.assertIsNotNone(self.metric("DCGM_FI_DEV_GPU_UTIL", gpu="0", Hostname="pkg-node-edited"))
        self.wait_metric("gpuscope_queue_records", lambda v: (v or 0) >= 3, "the queue after the upgrade",
                         queue="events")

        self.logs.start()
        harness.wait_for(lambda: all(self.logs.query(f"pkgtest{m}") for m in markers), 120,
                         "the events queued before the upgrade in VictoriaLogs")

    # --- 6. removal and purge --------------------------------------------------------------------------------

    def test_6_removal_keeps_the_data_and_purge_deletes_it(self):
        self.apt("remove", "gpuscope")
        self.assertNotEqual(self.root.run("systemctl", "is-active", "gpuscope-agent", check=False).stdout.strip(),
                            "active")
        self.assertFalse(os.path.exists(self.root.path("/usr/bin/gpuscope-agent")))
        self.assertFalse(os.path.exists(self.root.path("/usr/lib/systemd/system/gpuscope-agent.service")))
        self.assertTrue(os.path.isdir(self.root.path("/var/lib/gpuscope/queue")))
        self.assertTrue(os.path.isfile(self.root.path("/etc/gpuscope/agent.yml")))
        self.assertEqual(self.root.run("getent", "passwd", "gpuscope", check=False).returncode, 0)

        self.apt("purge", "gpuscope")
        self.assertFalse(self.root.exists("/var/lib/gpuscope"))
        self.assertFalse(os.path.exists(self.root.path("/etc/gpuscope/agent.yml")))
        self.assertTrue(os.path.isfile(self.root.path("/etc/gpuscope/agent.d/50-test.yml")))


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""Component: the systemd files the packages ship (deploy/systemd), checked by systemd's own tools without
booting anything.

- `systemd-analyze verify` of gpuscope-agent.service, alone and with each example drop-in over it, in a
  scratch root holding the host's units, the unit and the built agent at /usr/bin/gpuscope-agent (the man
  page check runs in integration_package_debian12, where the package put the page);
- `systemd-analyze security` of the same combinations: the base unit below 2.0, and every figure
  deploy/systemd/README.md states is the measured one;
- the hardening the README promises is in the unit (no capability, the journal group, the device list);
- systemd-sysusers and systemd-tmpfiles on the shipped sysusers.d and tmpfiles.d files in a scratch root:
  the user, its home and shell, /run/gpuscope owned by it and /run/gpuscope/jobs by root.

Usage: systemd_unit_test.py REPO_ROOT AGENT"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

REPO, AGENT = sys.argv[1:3]
SYSTEMD = os.path.join(REPO, "deploy", "systemd")
UNIT = os.path.join(SYSTEMD, "gpuscope-agent.service")
EXAMPLES = os.path.join(SYSTEMD, "examples")
HOST_UNITS = "/lib/systemd/system"

# The README's exposure table: its first column names the drop-ins over the unit.
COMBINATIONS = {
    "`gpuscope-agent.service` as installed": [],
    "with `kmsg.conf`": ["kmsg.conf"],
    "with `proc-environ.conf`": ["proc-environ.conf"],
    "with `kmsg.conf` and `proc-environ.conf`": ["kmsg.conf", "proc-environ.conf"],
    "with `sinks.conf`": ["sinks.conf"],
    "with `ebpf.conf`": ["ebpf.conf"],
}


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def readme_exposures():
    with open(os.path.join(SYSTEMD, "README.md")) as f:
        text = f.read()
    section = text[text.index("## Exposure"):]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| (.+?) \| (\d\.\d) OK \|$", section, re.M)}


class UnitFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-unit-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def root_with(self, dropins):
        """A scratch root: the host's units, ours, the drop-ins in /etc, the agent where ExecStart says."""
        root = os.path.join(self.dir, "root-" + "-".join(dropins or ["base"]))
        units = os.path.join(root, "usr/lib/systemd/system")
        shutil.copytree(HOST_UNITS, units, symlinks=True)
        shutil.copy(UNIT, units)
        os.makedirs(os.path.join(root, "usr/bin"))
        shutil.copy(AGENT, os.path.join(root, "usr/bin/gpuscope-agent"))
        dropin_dir = os.path.join(root, "etc/systemd/system/gpuscope-agent.service.d")
        os.makedirs(dropin_dir)
        for name in dropins:
            shutil.copy(os.path.join(EXAMPLES, name), dropin_dir)
        return root

    def combined_unit(self, dropins):
        """The unit with the drop-ins appended, which systemd parses as it parses drop-ins: for the offline
        security assessment, which reads one file."""
        path = os.path.join(self.dir, "-".join(dropins or ["base"]), "gpuscope-agent.service")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as out:
            for name in [UNIT] + [os.path.join(EXAMPLES, d) for d in dropins]:
                with open(name) as f:
                    out.write(f.read() + "\n")
        return path

    def test_verify_passes_for_the_unit_and_every_dropin_over_it(self):
        for dropins in COMBINATIONS.values():
            with self.subTest(dropins=dropins):
                result = run("systemd-analyze", "verify", "--man=no", f"--root={self.root_with(dropins)}",
                             "gpuscope-agent.service")
                self.assertEqual((result.returncode, result.stdout + result.stderr), (0, ""))

    def test_verify_would_catch_a_broken_dropin(self):
        # The check can fail: an unknown key in a drop-in is reported.
        root = self.root_with([])
        with open(os.path.join(root, "etc/systemd/system/gpuscope-agent.service.d/typo.conf"), "w") as f:
            f.write("[Service]\nProtectSytem=strict\n")
        result = run("systemd-analyze", "verify", "--man=no", f"--root={root}", "gpuscope-agent.service")
        self.assertIn("Unknown key 'ProtectSytem'", result.stderr)

    def test_exposure_is_below_2_and_the_readme_states_the_measured_figures(self):
        stated = readme_exposures()
        self.assertEqual(set(stated), set(COMBINATIONS))
        measured = {}
        for label, dropins in COMBINATIONS.items():
            result = run("systemd-analyze", "security", "--offline=true", "--no-pager",
                         self.combined_unit(dropins))
            match = re.search(r"Overall exposure level for \S+: (\d+\.\d) (\w+)", result.stdout)
            self.assertIsNotNone(match, result.stdout + result.stderr)
            measured[label] = match.group(1)
            print(f"exposure {label}: {match.group(1)} {match.group(2)}")
        self.assertLess(float(measured["`gpuscope-agent.service` as installed"]), 2.0)
        self.assertEqual(measured, stated)

    def test_the_ebpf_dropin_adds_back_only_its_two_system_calls(self):
        # systemd merges an allow-list entry after the unit's "~@privileged" back into the allow list: the
        # assessment of the merged filter names bpf (@privileged) and perf_event_open (@debug) as allowed with
        # ebpf.conf, and neither group without it; every other group it judges stays as the base unit has it.
        def groups(dropins):
            result = run("systemd-analyze", "security", "--offline=true", "--no-pager", self.combined_unit(dropins))
            return result.stdout, {m.group(2): m.group(1) for m in
                                   re.finditer(r"^(\S) SystemCallFilter=~(@[a-z-]+) .*$", result.stdout, re.M)}
        (_, base), (report, ebpf) = groups([]), groups(["ebpf.conf"])
        self.assertEqual((base["@privileged"], base["@debug"]), ("\u2713", "\u2713"))
        self.assertEqual((ebpf["@privileged"], ebpf["@debug"]), ("\u2717", "\u2717"))
        self.assertEqual({g: v for g, v in ebpf.items() if g not in ("@privileged", "@debug")},
                         {g: v for g, v in base.items() if g not in ("@privileged", "@debug")})
        self.assertIn("(e.g. bpf is allowed)", report)
        self.assertIn("(e.g. perf_event_open is allowed)", report)

    def test_the_base_unit_holds_no_capability_and_the_promised_sandbox(self):
        with open(UNIT) as f:
            settings = [line.strip() for line in f if line.strip() and not line.startswith("#")]
        for expected in ["Type=notify", "User=gpuscope", "Group=gpuscope", "CapabilityBoundingSet=",
                         "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
                         "ProtectKernelLogs=yes", "DevicePolicy=closed", "DeviceAllow=char-nvidia* rw",
                         "SupplementaryGroups=systemd-journal", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
                         "SystemCallFilter=@system-service", "Restart=on-failure", "StateDirectory=gpuscope",
                         "ExecStart=/usr/bin/gpuscope-agent --config=/etc/gpuscope/agent.yml "
                         "--config.dir=/etc/gpuscope/agent.d"]:
            self.assertIn(expected, settings)
        self.assertFalse([s for s in settings if s.startswith("AmbientCapabilities=")])

    def test_sysusers_and_tmpfiles_make_the_user_and_the_run_directories(self):
        root = os.path.join(self.dir, "scratch")
        for sub in ("etc", "usr/lib/sysusers.d", "usr/lib/tmpfiles.d"):
            os.makedirs(os.path.join(root, sub))
        for name in ("passwd", "group"):
            open(os.path.join(root, "etc", name), "w").close()
        shutil.copy(os.path.join(SYSTEMD, "gpuscope.sysusers"), os.path.join(root, "usr/lib/sysusers.d/gpuscope.conf"))
        shutil.copy(os.path.join(SYSTEMD, "gpuscope.tmpfiles"), os.path.join(root, "usr/lib/tmpfiles.d/gpuscope.conf"))
        result = run("systemd-sysusers", f"--root={root}")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(root, "etc/passwd")) as f:
            entry = f.read().strip().split(":")
        self.assertEqual(entry[0], "gpuscope")
        uid, gid = int(entry[2]), int(entry[3])
        self.assertLess(uid, 1000)  # a system user
        self.assertEqual(entry[5:], ["/var/lib/gpuscope", "/usr/sbin/nologin"])
        result = run("systemd-tmpfiles", f"--root={root}", "--create")
        self.assertEqual(result.returncode, 0, result.stderr)
        run_dir = os.stat(os.path.join(root, "run/gpuscope"))
        jobs = os.stat(os.path.join(root, "run/gpuscope/jobs"))
        self.assertEqual((run_dir.st_uid, run_dir.st_gid, run_dir.st_mode & 0o7777), (uid, gid, 0o755))
        self.assertEqual((jobs.st_uid, jobs.st_gid, jobs.st_mode & 0o7777), (0, 0, 0o755))


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""Component: the .deb and the .rpm that CPack built from this tree (the package_build fixture), read with
the package managers' own tools.

- .deb (dpkg-deb, lintian): its control fields and library dependencies, every file the package promises
  (binaries, NCCL plugin, Python wheel and sources, agent.yml as the one conffile, unit, tmpfiles.d,
  sysusers.d, drop-ins, Slurm scripts executable, every file of the generated mixin, man pages, copyright,
  changelog), stripped binaries, no byte code; maintainer scripts that parse and do what they say;
  lintian without an error (its warnings and notes are printed).
- .rpm (rpm -qp): name, version, license; the same file list as the .deb; agent.yml as
  %config(noreplace); /var/lib/gpuscope owned by gpuscope, 0750; the scriptlets (user first, preset on
  install, disable on erase, try-restart on upgrade) parse; the requirements, the changelog.
- the payload itself: agent.yml equal to what the agent prints for deploy/packages/node.yml, and loading
  it back gives the same file; the wheel's version is the project's and it imports; the man pages render
  without a warning and carry every flag.

Usage: package_contents_test.py REPO_ROOT PACKAGE_DIR VERSION AGENT"""

import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

REPO, PACKAGES, VERSION, AGENT = sys.argv[1:5]

# Every path the package must hold (beside the mixin, the docs and the Python sources, checked as trees).
PROMISED = {
    "/usr/bin/gpuscope-agent", "/usr/bin/gpuscope", "/usr/lib/gpuscope/libnccl-profiler-gpuscope.so",
    f"/usr/share/gpuscope/python/gpuscope-{VERSION}-py3-none-any.whl",
    "/usr/share/gpuscope/python/gpuscope/__init__.py", "/etc/gpuscope/agent.yml", "/etc/gpuscope/agent.d",
    "/var/lib/gpuscope", "/usr/lib/systemd/system/gpuscope-agent.service", "/usr/lib/tmpfiles.d/gpuscope.conf",
    "/usr/lib/sysusers.d/gpuscope.conf", "/usr/share/gpuscope/systemd/kmsg.conf",
    "/usr/share/gpuscope/systemd/ebpf.conf", "/usr/share/gpuscope/examples/ebpf.yml",
    "/usr/share/gpuscope/systemd/proc-environ.conf", "/usr/share/gpuscope/systemd/sinks.conf",
    "/usr/share/gpuscope/examples/kmsg.yml", "/usr/share/gpuscope/examples/sinks.yml",
    "/usr/share/gpuscope/slurm/prolog.sh", "/usr/share/gpuscope/slurm/epilog.sh",
    "/usr/share/gpuscope/slurm/healthcheck.sh", "/usr/share/gpuscope/prometheus/gpuscope-scrape.yml",
    "/usr/share/man/man8/gpuscope-agent.8.gz", "/usr/share/man/man1/gpuscope.1.gz",
    "/usr/share/doc/gpuscope/copyright", "/usr/share/doc/gpuscope/changelog.gz",
    "/usr/share/doc/gpuscope/systemd.md", "/usr/share/doc/gpuscope/metrics.md",
    "/usr/share/doc/gpuscope/deploy/quickstart.md",
}


def run(*args, **kwargs):
    return subprocess.run(list(args), capture_output=True, text=True, check=True, **kwargs).stdout


def one(pattern):
    found = glob.glob(os.path.join(PACKAGES, pattern))
    if len(found) != 1:
        raise AssertionError(f"expected one {pattern} in {PACKAGES}, found {found}")
    return found[0]


class Deb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.deb = one(f"gpuscope_{VERSION}_amd64.deb")
        cls.dir = tempfile.mkdtemp(prefix="gpuscope-deb-")
        run("dpkg-deb", "-R", cls.deb, cls.dir)
        # Listing lines: mode owner/group size date time ./path
        cls.listing = {}
        for line in run("dpkg-deb", "-c", cls.deb).splitlines():
            fields = line.split(None, 5)
            cls.listing["/" + fields[5].lstrip("./").rstrip("/")] = (fields[0], fields[1])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def field(self, name):
        return run("dpkg-deb", "-f", self.deb, name).strip()

    def test_control_fields_and_library_dependencies(self):
        self.assertEqual(self.field("Package"), "gpuscope")
        self.assertEqual(self.field("Version"), VERSION)
        self.assertEqual(self.field("Architecture"), "amd64")
        self.assertRegex(self.field("Maintainer"), r"^.+ <[^@\s]+@[^@\s]+>$")
        depends = [d.split()[0] for d in self.field("Depends").split(", ")]
        # dpkg-shlibdeps found what the binaries link; libcurl (dlopen) and passwd (useradd) are named.
        for package in ("libc6", "libstdc++6", "libyaml-cpp0.7", "libsystemd0", "libssl3", "libgrpc++1.51",
                        "libcurl4", "passwd"):
            self.assertIn(package, depends)

    def test_every_promised_file_is_there_owned_by_root(self):
        missing = PROMISED - set(self.listing)
        self.assertFalse(missing)
        self.assertEqual({owner for _, owner in self.listing.values()}, {"root/root"})
        for script in ("prolog.sh", "epilog.sh", "healthcheck.sh", "job-summary-epilog.sh"):
            self.assertEqual(self.listing[f"/usr/share/gpuscope/slurm/{script}"][0], "-rwxr-xr-x")
        self.assertFalse([p for p in self.listing if "__pycache__" in p or p.endswith(".pyc")])

    def test_the_generated_mixin_and_the_runbooks_are_there_whole(self):
        for source, target in (("deploy/mixin/generated", "/usr/share/gpuscope/mixin"),
                               ("docs/runbooks", "/usr/share/doc/gpuscope/runbooks")):
            base = os.path.join(REPO, source)
            for dirpath, _, files in os.walk(base):
                for name in files:
                    relative = os.path.relpath(os.path.join(dirpath, name), base)
                    self.assertIn(f"{target}/{relative}", self.listing)

    def test_binaries_are_stripped_and_hardened(self):
        for path in ("usr/bin/gpuscope-agent", "usr/bin/gpuscope", "usr/lib/gpuscope/libnccl-profiler-gpuscope.so"):
            sections = run("readelf", "-S", "-W", os.path.join(self.dir, path))
            self.assertNotIn(".debug_info", sections, path)
            dynamic = run("readelf", "-d", "-W", os.path.join(self.dir, path))
            self.assertRegex(dynamic, r"FLAGS.*\bBIND_NOW\b", path)  # full RELRO (-z now)
            self.assertIn("GNU_RELRO", run("readelf", "-l", "-W", os.path.join(self.dir, path)), path)
        symbols = run("readelf", "--dyn-syms", "-W", os.path.join(self.dir, "usr/bin/gpuscope-agent"))
        self.assertIn("__stack_chk_fail", symbols)
        self.assertRegex(symbols, r"__\w+_chk@")  # fortified libc calls

    def test_agent_yml_is_the_one_conffile_and_what_the_agent_prints_for_the_node_profile(self):
        with open(os.path.join(self.dir, "DEBIAN/conffiles")) as f:
            self.assertEqual(f.read().split(), ["/etc/gpuscope/agent.yml"])
        packaged = os.path.join(self.dir, "etc/gpuscope/agent.yml")
        with open(packaged) as f:
            text = f.read()
        printed = run(AGENT, "--config", os.path.join(REPO, "deploy/packages/node.yml"), "--print-config-file")
        self.assertEqual(text, printed)
        # The packaged file loads and prints back unchanged: valid, and it sets what node.yml sets.
        self.assertEqual(run(AGENT, "--config", packaged, "--print-config-file"), text)
        self.assertIn('  hpc_job_mapping_dir: "/run/gpuscope/jobs"\n', text)
        self.assertIn('    matches: ["_TRANSPORT=kernel", "_SYSTEMD_UNIT=slurmd.service"]\n', text)
        self.assertIn('  #kmsg_path: ""\n', text)

    def test_maintainer_scripts_parse_and_do_their_parts(self):
        scripts = {}
        for name in ("postinst", "prerm", "postrm"):
            path = os.path.join(self.dir, "DEBIAN", name)
            self.assertTrue(os.access(path, os.X_OK), name)
            run("sh", "-n", path)
            with open(path) as f:
                scripts[name] = f.read()
        self.assertIn("useradd --system --gid gpuscope --home-dir /var/lib/gpuscope", scripts["postinst"])
        self.assertIn("chmod 0750 /var/lib/gpuscope", scripts["postinst"])
        self.assertIn("systemd-tmpfiles --create /usr/lib/tmpfiles.d/gpuscope.conf", scripts["postinst"])
        self.assertIn('deb-systemd-invoke "$action"', scripts["postinst"])
        self.assertIn("deb-systemd-invoke stop", scripts["prerm"])
        self.assertIn('[ "$1" = "remove" ]', scripts["prerm"])  # not on upgrade
        self.assertIn("rm -rf /var/lib/gpuscope", scripts["postrm"])
        purge = scripts["postrm"][scripts["postrm"].index('if [ "$1" = "purge" ]'):]
        self.assertIn("rm -rf /var/lib/gpuscope", purge)  # only on purge
        self.assertEqual(scripts["postrm"].count("rm -rf /var/lib/gpuscope"), 1)

    def test_the_example_agent_d_files_load_over_the_packaged_agent_yml(self):
        # What a site copies to /etc/gpuscope/agent.d/ from /usr/share/gpuscope/examples/, with the packaged
        # agent.yml, as the unit starts the agent: every key is one the agent takes.
        examples = os.path.join(self.dir, "usr/share/gpuscope/examples")
        self.assertEqual(sorted(os.listdir(examples)), ["ebpf.yml", "kmsg.yml", "sinks.yml"])
        text = run(AGENT, "--config", os.path.join(self.dir, "etc/gpuscope/agent.yml"), "--config.dir", examples,
                   "--print-config-file")
        self.assertIn('  kmsg_path: "/dev/kmsg"\n', text)
        self.assertRegex(text, r"(?m)^ebpf:\n(?:  #.*\n)*  enabled: true\n")
        self.assertIn('    url: "https://loki.example.internal/loki/api/v1/push"\n', text)

    def test_the_wheel_is_the_projects_version_and_imports(self):
        wheel = os.path.join(self.dir, f"usr/share/gpuscope/python/gpuscope-{VERSION}-py3-none-any.whl")
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            metadata = z.read(f"gpuscope-{VERSION}.dist-info/METADATA").decode()
        self.assertIn("gpuscope/training.py", names)
        self.assertIn(f"Version: {VERSION}\n", metadata)
        out = run(sys.executable, "-c", "import gpuscope, gpuscope.training; print(gpuscope.__file__)",
                  env=dict(os.environ, PYTHONPATH=wheel), cwd=self.dir)
        self.assertIn(".whl", out)

    def test_man_pages_render_cleanly_and_carry_the_flags(self):
        for page, must in (("usr/share/man/man8/gpuscope-agent.8.gz", ["--config.dir", "--print-config-file",
                                                                    "/etc/gpuscope/agent.yml"]),
                           ("usr/share/man/man1/gpuscope.1.gz", ["COMMAND CHARGEBACK", "--prometheus.url"])):
            path = os.path.join(self.dir, page)
            with gzip.open(path, "rt") as f:
                title = f.read().split("\n")[1]
            self.assertTrue(title.startswith(".TH "), title)
            self.assertIn(VERSION, title)
            result = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", path], capture_output=True, text=True,
                                    env=dict(os.environ, MANWIDTH="100", MAN_KEEP_FORMATTING="0"))
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stderr, "", page)
            text = re.sub(r".\x08", "", result.stdout).replace("\u2010", "-")
            for word in must:
                self.assertIn(word, text, page)

    def test_changelog_is_debians_format_for_this_version(self):
        with gzip.open(os.path.join(self.dir, "usr/share/doc/gpuscope/changelog.gz"), "rt") as f:
            first = f.readline()
        self.assertEqual(first, f"gpuscope ({VERSION}) unstable; urgency=medium\n")

    def test_lintian_finds_no_error(self):
        result = subprocess.run(["lintian", "--tag-display-limit", "0", "--display-info", self.deb],
                                capture_output=True, text=True)
        tags = [line for line in result.stdout.splitlines() if re.match(r"^[EWIPNX]: ", line)]
        print("lintian:\n  " + "\n  ".join(tags or ["(no tag)"]))
        self.assertEqual([t for t in tags if t.startswith("E: ")], [])
        self.assertEqual([t for t in tags if t.startswith("W: ")], [])


class Rpm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rpm = one(f"gpuscope-{VERSION}-1.x86_64.rpm")

    def query(self, *args):
        return run("rpm", "-qp", *args, self.rpm)

    def test_name_version_license(self):
        self.assertEqual(self.query("--queryformat", "%{NAME} %{VERSION} %{RELEASE} %{ARCH} %{LICENSE}"),
                         f"gpuscope {VERSION} 1 x86_64 Apache-2.0")

    def test_same_files_as_the_deb(self):
        rpm_files = set(self.query("--list").split())
        deb_entries = {}  # path: whether the .deb lists it as a directory
        for line in run("dpkg-deb", "-c", one(f"gpuscope_{VERSION}_amd64.deb")).splitlines():
            fields = line.split(None, 5)
            deb_entries["/" + fields[5].lstrip("./").rstrip("/")] = fields[0].startswith("d")
        # The .deb also lists the system directories it passes through (/usr, /etc, /usr/lib/systemd, ...),
        # which the .rpm leaves to the filesystem and systemd packages; every file and every directory of
        # its own is in both.
        self.assertLessEqual(rpm_files, set(deb_entries))
        self.assertEqual({p for p, is_dir in deb_entries.items() if not is_dir} - rpm_files, set())
        self.assertEqual({p for p, is_dir in deb_entries.items() if is_dir and "gpuscope" in p} - rpm_files, set())
        self.assertLessEqual(PROMISED, rpm_files)

    def test_config_and_state_directory(self):
        self.assertEqual(self.query("--configfiles").split(), ["/etc/gpuscope/agent.yml"])
        # --dump: path size mtime digest mode owner group isconfig isdoc rdev symlink
        dump = {line.split()[0]: line.split() for line in self.query("--dump").splitlines()}
        state = dump["/var/lib/gpuscope"]
        self.assertEqual((oct(int(state[4], 8) & 0o7777), state[5], state[6]), ("0o750", "gpuscope", "gpuscope"))
        self.assertEqual(dump["/etc/gpuscope/agent.yml"][7], "1")
        # fflags: c = %config, n = noreplace
        self.assertIn("cn /etc/gpuscope/agent.yml\n", self.query("--queryformat", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]"))

    def test_scriptlets_parse_and_do_their_parts(self):
        scripts = self.query("--scripts")
        parts = re.split(r"^(\w+) scriptlet \(using (\S+)\):$", scripts, flags=re.M)
        bodies = {parts[i]: parts[i + 2] for i in range(1, len(parts), 3)}
        self.assertEqual(set(bodies), {"preinstall", "postinstall", "preuninstall", "postuninstall"})
        for name, body in bodies.items():
            subprocess.run(["sh", "-n"], input=body, text=True, check=True)
        self.assertIn("gpuscope_create_user", bodies["preinstall"].split("}")[-1])
        self.assertIn("systemctl --no-reload preset gpuscope-agent.service", bodies["postinstall"])
        self.assertIn("chmod 0750 /var/lib/gpuscope", bodies["postinstall"])
        self.assertIn("disable --now gpuscope-agent.service", bodies["preuninstall"])
        self.assertIn("try-restart gpuscope-agent.service", bodies["postuninstall"])

    def test_requirements_and_changelog(self):
        requires = self.query("--requires")
        for requirement in ("libcurl", "shadow-utils", "libyaml-cpp.so.0.7()(64bit)", "libsystemd.so.0()(64bit)"):
            self.assertIn(requirement, requires)
        self.assertRegex(self.query("--changelog"), rf"^\* \w{{3}} \w{{3}} \d\d \d{{4}} .+ - {re.escape(VERSION)}\n")


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""A clean Debian root booted with systemd-nspawn, for the package tests: the real systemd runs as the
container's PID 1, so a package's maintainer scripts, its unit's Type=notify, sandboxing, drop-ins and
journal are systemd's own. The container shares the host's network (its services are on the host's
loopback) and gets the host's /dev/kmsg with CAP_SYSLOG, so that its journald reads the real kernel log.
Standard library only; needs root.
"""

import os
import shutil
import subprocess
import tempfile
import time

PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


class BootedRoot:
    """The root tarball unpacked into a fresh directory and booted. `binds` are (host, container, read_only)
    triples. stop() powers it off and removes the directory."""

    def __init__(self, tarball, binds=(), prepare=None):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-root-", dir="/var/tmp")
        self.log_path = self.dir + ".nspawn.log"
        self.process = None
        self._log = None
        try:
            self._boot(tarball, binds, prepare)
        except BaseException:
            self.stop()  # nothing of a root that did not boot is left behind
            raise

    def _boot(self, tarball, binds, prepare):
        subprocess.run(["tar", "-C", self.dir, "--numeric-owner", "-xf", tarball], check=True)
        # journald of a container reads /dev/kmsg only when told to.
        conf = self.path("/etc/systemd/journald.conf.d")
        os.makedirs(conf, exist_ok=True)
        with open(os.path.join(conf, "kmsg.conf"), "w") as f:
            f.write("[Journal]\nReadKMsg=yes\n")
        if prepare:
            prepare(self)
        arguments = ["systemd-nspawn", "--directory", self.dir, "--keep-unit", "--register=no", "--boot",
                     "--console=pipe", "--quiet", "--bind=/dev/kmsg", "--capability=CAP_SYSLOG",
                     f"--machine=gpuscope-{os.getpid()}"]
        for host, container, read_only in binds:
            arguments.append(f"--bind{'-ro' if read_only else ''}={host}:{container}")
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(arguments, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        self.leader = self._wait_for_leader()
        self._wait_until_booted()

    def path(self, container_path):
        """The host path of `container_path`, for what lies on the root's own disk (not /run, /tmp: the
        container mounts its own there), before boot or beside it."""
        return os.path.join(self.dir, container_path.lstrip("/"))

    def _descendants(self, pid):
        out = []
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            return out
        for child in children:
            out.append(child)
            out.extend(self._descendants(child))
        return out

    def _wait_for_leader(self):
        """The host pid of the container's PID 1 (systemd in a PID namespace of its own)."""
        own = os.readlink("/proc/self/ns/pid")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"systemd-nspawn exited with {self.process.returncode}: {self.read_log()}")
            for pid in self._descendants(self.process.pid):
                try:
                    with open(f"/proc/{pid}/comm") as f:
                        comm = f.read().strip()
                    if comm == "systemd" and os.readlink(f"/proc/{pid}/ns/pid") != own:
                        return pid
                except OSError:
                    continue
            time.sleep(0.1)
        raise AssertionError(f"no systemd in the container after 60 s: {self.read_log()}")

    def _wait_until_booted(self):
        deadline = time.monotonic() + 90
        state = ""
        while time.monotonic() < deadline:
            state = self.run("systemctl", "is-system-running", check=False).stdout.strip()
            if state in ("running", "degraded"):
                return
            time.sleep(0.2)
        raise AssertionError(f"the container did not finish booting (state {state!r}): {self.read_log()}")

    def run(self, *command, check=True, input=None, env=None, timeout=300):
        """`command` in the container (its mount, UTS, IPC and PID namespaces, a clean environment)."""
        environment = ["PATH=" + PATH, "LANG=C.UTF-8"] + [f"{k}={v}" for k, v in (env or {}).items()]
        result = subprocess.run(
            ["nsenter", "--target", str(self.leader), "--mount", "--uts", "--ipc", "--pid", "--",
             "/usr/bin/env", "-i", *environment, *command],
            input=input, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(command)} exited with {result.returncode}:\n{result.stdout}\n"
                                 f"{result.stderr}")
        return result

    def write(self, container_path, text, mode=0o644):
        """Writes a file as the container sees it (its /run and /tmp are its own tmpfs, not the host's
        directory)."""
        self.run("sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"', "sh", container_path,
                 f"{mode:o}", input=text)

    def read(self, container_path):
        return self.run("cat", container_path).stdout

    def exists(self, container_path):
        return self.run("test", "-e", container_path, check=False).returncode == 0

    def read_log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            if getattr(self, "leader", None):
                self.run("systemctl", "poweroff", "--no-block", check=False, timeout=30)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        try:
            os.unlink(self.log_path)
        except OSError:
            pass

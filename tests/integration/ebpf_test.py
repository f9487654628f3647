"""Integration (as root, real kernel): the agent's eBPF programs loaded and attached, and a test job's
doings reported exactly, attributed to the job by its cgroup.

The job (tests/integration/ebpf_job.py) is a process the test puts into a Slurm job cgroup
(memory:/slurm/uid_0/job_4242/step_0/task_0, the layout Slurm's cgroup/v1 plugin makes) with a working
directory of its own, whose main thread is named pt_main_thread. It
  - loads the stand-in libcuda.so.1 (sim/cuda), which the agent finds in its maps and probes; allocates
    1, 2 and 4 MiB, frees the 2 MiB, and asks for 1 TiB (CUDA_ERROR_OUT_OF_MEMORY);
  - writes a checkpoint by a path relative to its working directory, and another through a descriptor
    duplicated with dup2 (as a shell's "> file"), and a third on a tmpfs mounted below the watched
    directory, reads the first back through openat() on a directory descriptor, opens it through a
    symbolic link that lives outside the watched directory, and writes a file in /dev/shm (not watched);
  - connects to four listeners on loopback: 127.0.0.1 and [::1], one port of each inside the allow-list and
    one outside, and once more to the IPv4 one outside from a child process that exits at once.
Then a process of another user (nobody), in no job, reads the checkpoint. The agent must report exactly
those: CUDA memory 5 MiB for the job's pid, 3 allocations, 1 free, 1 failure; 5 connections, 3 of them
unexpected to 2 destinations (one event per destination a minute); 5 opens by root in the job, 1 by nobody outside it and that one as a
foreign open of root's file; 3 MiB written and 1 MiB read; and the events (2 unexpected connections, 1
foreign access, 1 allocation failure) counted, and shipped to a real Loki receiver (VictoriaLogs) carrying
the job and the process name pt_main_thread.

Usage: ebpf_test.py AGENT SIM_NVML SIM_LIBCUDA VICTORIA_LOGS REPO_ROOT"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
from harness import metric, wait_for  # noqa: E402
import peers  # noqa: E402

AGENT, SIM, LIBCUDA, VICTORIA_LOGS, ROOT = sys.argv[1:6]
SCENARIO = os.path.join(ROOT, "sim", "scenarios", "h100-training.yaml")
JOB = "4242"
MIB = 1 << 20
CGROUP = "/sys/fs/cgroup/memory/slurm/uid_0/job_4242/step_0/task_0"
SHM_FILE = f"/dev/shm/gpuscope-ebpf-test-{os.getpid()}"


class Listener:
    """A TCP listener on loopback that accepts and closes every connection, in a thread of its own."""

    def __init__(self, family, address):
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.bind((address, 0))
        self.socket.listen(16)
        self.port = self.socket.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            connection.close()

    def close(self):
        self.socket.close()


@unittest.skipUnless(os.geteuid() == 0, "loading BPF programs needs root")
class EbpfProgramsOnARealKernel(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-ebpf-test-")
        os.chmod(self.workdir, 0o755)  # nobody reads the checkpoint below it
        self.checkpoints = os.path.join(self.workdir, "checkpoints")
        self.datasets = os.path.join(self.workdir, "datasets")
        self.jobdir = os.path.join(self.workdir, "job")
        for d in (self.checkpoints, self.datasets, self.jobdir):
            os.makedirs(d, mode=0o755)
        os.makedirs(os.path.join(self.checkpoints, "step_1"), mode=0o755)
        # A file system of its own mounted below the watched directory: the walk crosses the mount point.
        self.tmpfs = os.path.join(self.checkpoints, "fast")
        os.makedirs(self.tmpfs, mode=0o755)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "gpuscope-test", self.tmpfs], check=True)
        # A link outside the watched directory into it: the path string never names /checkpoints.
        os.symlink(self.checkpoints, os.path.join(self.jobdir, "ckpt_link"))
        os.makedirs(CGROUP, exist_ok=True)
        self.listeners = {
            "v4_allowed": Listener(socket.AF_INET, "127.0.0.1"),
            "v4_denied": Listener(socket.AF_INET, "127.0.0.1"),
            "v6_allowed": Listener(socket.AF_INET6, "::1"),
            "v6_denied": Listener(socket.AF_INET6, "::1"),
        }
        self.receiver = peers.VictoriaLogs(VICTORIA_LOGS)
        self.job = None
        allow = [f"127.0.0.1/32:{self.listeners['v4_allowed'].port}", f"[::1]:{self.listeners['v6_allowed'].port}",
                 "*:9"]  # a rule of every form the tests below do not hit
        args = ["--ebpf", "--ebpf.watch-dir", self.checkpoints, "--ebpf.watch-dir", self.datasets,
                "--events.state-dir", os.path.join(self.workdir, "state"),
                "--sink.loki.url", self.receiver.loki_push_url(), "--events.poll-interval", "100ms"]
        for rule in allow:
            args += ["--ebpf.allow", rule]
        self.agent = harness.Agent(AGENT, SIM, SCENARIO, args, env={"GPUSCOPE_SIM_KERNEL_LOG": ""})

    def tearDown(self):
        failed = harness.failed(self)
        if self.job is not None and self.job.poll() is None:
            self.job.kill()
            self.job.wait()
        self.agent.finish(show_log=failed)
        if failed:
            print(f"--- victoria-logs log ---\n{self.receiver.read_log()[-3000:]}", file=sys.stderr)
        self.receiver.cleanup()
        for listener in self.listeners.values():
            listener.close()
        # task_0, step_0, job_4242, uid_0, slurm: the empty ones (another test's job may still hold slurm).
        d = CGROUP
        while d != "/sys/fs/cgroup/memory":
            try:
                os.rmdir(d)
            except OSError:
                break
            d = os.path.dirname(d)
        try:
            os.unlink(SHM_FILE)
        except FileNotFoundError:
            pass
        subprocess.run(["umount", "-l", self.tmpfs], check=False)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def ask(self, line):
        self.job.stdin.write(line + "\n")
        self.job.stdin.flush()
        answer = self.job.stdout.readline().strip()
        self.assertTrue(answer.startswith("ok") or answer.startswith("err"), f"{line}: {answer!r}")
        return answer

    def test_job_is_reported_exactly_and_by_its_cgroup(self):
        for program in ("cuda", "connect", "files"):
            wait_for(lambda: metric(self.agent, "gpuscope_ebpf_program_loaded", program=program) == 1, 30,
                     f"the {program} program loaded")
        self.job = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ebpf_job.py"),
             os.path.join(CGROUP, "cgroup.procs"), self.jobdir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "GPUSCOPE_SIM_SCENARIO": SCENARIO})
        self.assertEqual(self.job.stdout.readline().strip(), "ready")
        with open(f"/proc/{self.job.pid}/comm") as f:
            self.assertEqual(f.read().strip(), "pt_main_thread")

        # CUDA: the library is found in the job's maps and probed before the first allocation.
        self.assertEqual(self.ask(f"load {LIBCUDA}"), "ok")
        # (by the log: another process on the machine may map another libcuda, or this one first)
        attached = re.compile(r"ebpf cuda probes attached.* library=\S*" + re.escape(LIBCUDA) + "$", re.M)
        wait_for(lambda: attached.search(self.agent.read_log()), 30, "the stand-in libcuda probed")
        self.assertGreaterEqual(metric(self.agent, "gpuscope_ebpf_cuda_libraries"), 1)
        pointers = [int(self.ask(f"alloc {n * MIB}").split()[1]) for n in (1, 2, 4)]
        self.assertEqual(self.ask(f"free {pointers[1]}"), "ok")
        self.assertEqual(self.ask(f"alloc {1 << 40}"), "err 2")

        # Files: a relative path, openat on a directory descriptor, a symbolic link from outside.
        self.assertEqual(self.ask(f"write ../checkpoints/step_1/model.pt {MIB}"), "ok")
        self.assertEqual(self.ask(f"dupwrite ../checkpoints/step_1/optimizer.pt {MIB}"), "ok")
        self.assertEqual(self.ask(f"write ../checkpoints/fast/shard.pt {MIB}"), "ok")  # across a mount
        self.assertEqual(self.ask(f"write {SHM_FILE} {MIB}"), "ok")  # not watched
        self.assertEqual(self.ask(f"readat {os.path.join(self.checkpoints, 'step_1')} model.pt"), f"ok {MIB}")
        self.assertEqual(self.ask("open ckpt_link/step_1/model.pt"), "ok")

        # Connections: IPv4 and IPv6, inside and outside the allow-list.
        for name, address in (("v4_allowed", "127.0.0.1"), ("v4_denied", "127.0.0.1"),
                              ("v6_allowed", "::1"), ("v6_denied", "::1")):
            self.assertEqual(self.ask(f"connect {address} {self.listeners[name].port}"), "ok")

        # A child that connects and exits at once: gone before the agent reads its record, it is tied to
        # the job through its parent.
        self.assertEqual(self.ask(f"childconnect 127.0.0.1 {self.listeners['v4_denied'].port}"), "ok")

        # Another user, in no job, reads the job's checkpoint.
        subprocess.run(["/bin/cat", os.path.join(self.checkpoints, "step_1", "model.pt")],
                       stdout=subprocess.DEVNULL, check=True,
                       preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))

        def job(name, **labels):
            return metric(self.agent, name, hpc_job=JOB, **labels)

        pid = str(self.job.pid)
        expected = [
            ("gpuscope_ebpf_cuda_memory_bytes", {"pid": pid}, 5 * MIB),
            ("gpuscope_ebpf_cuda_allocations_total", {}, 3),
            ("gpuscope_ebpf_cuda_allocated_bytes_total", {}, 7 * MIB),
            ("gpuscope_ebpf_cuda_frees_total", {}, 1),
            ("gpuscope_ebpf_cuda_allocation_failures_total", {"result": "CUDA_ERROR_OUT_OF_MEMORY"}, 1),
            ("gpuscope_ebpf_connections_total", {"family": "ipv4", "allowed": "true"}, 1),
            ("gpuscope_ebpf_connections_total", {"family": "ipv4", "allowed": "false"}, 2),
            ("gpuscope_ebpf_connections_total", {"family": "ipv6", "allowed": "true"}, 1),
            ("gpuscope_ebpf_connections_total", {"family": "ipv6", "allowed": "false"}, 1),
            ("gpuscope_ebpf_unexpected_connections_total",
             {"destination": f"127.0.0.1:{self.listeners['v4_denied'].port}"}, 2),
            ("gpuscope_ebpf_unexpected_connections_total",
             {"destination": f"[::1]:{self.listeners['v6_denied'].port}"}, 1),
            ("gpuscope_ebpf_file_opens_total", {"dir": self.checkpoints, "user": "root"}, 5),
            ("gpuscope_ebpf_file_written_bytes_total", {"dir": self.checkpoints}, 3 * MIB),
            ("gpuscope_ebpf_file_read_bytes_total", {"dir": self.checkpoints}, MIB),
        ]
        for name, labels, value in expected:
            wait_for(lambda: (lambda v: True if v == value else v)(job(name, **labels)) is True, 30,
                     f"{name}{labels} == {value}")
        # hpc_job=None: the label is absent (empty) for a process in no job.
        wait_for(lambda: metric(self.agent, "gpuscope_ebpf_file_foreign_opens_total", hpc_job=None,
                                dir=self.checkpoints, user="nobody", owner="root") == 1, 30,
                 "nobody's open of root's checkpoint counted as foreign")
        self.assertEqual(metric(self.agent, "gpuscope_ebpf_file_opens_total", hpc_job=None, dir=self.checkpoints,
                                user="nobody"), 1)

        # Exactly those: no other series of the job, no second unexpected destination, nothing in datasets.
        families = harness.exposition_families(self.agent.metrics())
        job_series = sorted((name, labels) for (name, labels) in harness.parse_exposition(self.agent.metrics())
                            if name.startswith("gpuscope_ebpf_") and dict(labels).get("hpc_job") == JOB)
        self.assertEqual(len(job_series), len(expected) + 2, job_series)  # and the I/O seconds of read and write
        self.assertIsNone(metric(self.agent, "gpuscope_ebpf_file_opens_total", dir=self.datasets))
        self.assertIn("gpuscope_ebpf_records_lost_total", families)
        self.assertEqual(metric(self.agent, "gpuscope_ebpf_records_lost_total"), 0)

        # The events, counted and shipped with the job and the process name.
        counts = {"ebpf_unexpected_connection": 2, "ebpf_foreign_file_access": 1, "ebpf_cuda_allocation_failure": 1}
        for event_class, n in counts.items():
            wait_for(lambda: metric(self.agent, "gpuscope_events_total", source="ebpf", **{"class": event_class})
                     == n, 30, f"{n} {event_class} events")
        entries = wait_for(lambda: (lambda e: e if len(e) == 3 else None)(
            self.receiver.query('class:ebpf_unexpected_connection OR class:ebpf_cuda_allocation_failure')),
            30, "the job's events in VictoriaLogs")
        for entry in entries:
            self.assertEqual(entry.get("hpc_job"), JOB, entry)
            self.assertEqual(entry.get("process"), "pt_main_thread", entry)
        destinations = sorted(e.get("destination") for e in entries if e.get("class") == "ebpf_unexpected_connection")
        self.assertEqual(destinations, sorted([f"127.0.0.1:{self.listeners['v4_denied'].port}",
                                               f"[::1]:{self.listeners['v6_denied'].port}"]))
        foreign = wait_for(lambda: self.receiver.query("class:ebpf_foreign_file_access"), 30, "the foreign open")
        self.assertEqual(foreign[0].get("owner"), "root")
        self.assertEqual(foreign[0].get("process_user"), "nobody")
        self.assertEqual(foreign[0].get("path"), os.path.join(self.checkpoints, "step_1", "model.pt"))
        self.job.stdin.write("exit\n")
        self.job.stdin.close()
        self.job.wait(timeout=10)
        # The process's memory leaves with it; the job's counters stay.
        wait_for(lambda: job("gpuscope_ebpf_cuda_memory_bytes") is None, 30, "the ended process's memory gone")
        self.assertEqual(job("gpuscope_ebpf_cuda_allocations_total"), 3)


class EbpfFilesProgramNeedsADirectory(unittest.TestCase):
    """Without --ebpf.watch-dir the files program (which hooks every syscall on the node) is not loaded at
    all; the others are."""

    @unittest.skipUnless(os.geteuid() == 0, "loading BPF programs needs root")
    def test_files_program_is_not_loaded_without_a_directory(self):
        agent = harness.Agent(AGENT, SIM, SCENARIO, ["--ebpf"], env={"GPUSCOPE_SIM_KERNEL_LOG": ""})
        try:
            for program in ("cuda", "connect"):
                wait_for(lambda: metric(agent, "gpuscope_ebpf_program_loaded", program=program) == 1, 30,
                         f"the {program} program loaded")
            self.assertIsNone(metric(agent, "gpuscope_ebpf_program_loaded", program="files"))
        finally:
            agent.finish(show_log=harness.failed(self))


class EbpfProgramsRefused(unittest.TestCase):
    """Without the privilege to load BPF (a user other than root), every program is reported as not
    loaded and the agent serves its other metrics: never fatal."""

    @unittest.skipUnless(os.geteuid() == 0, "needs root to switch to another user")
    def test_refused_programs_are_reported_not_fatal(self):
        workdir = tempfile.mkdtemp(prefix="gpuscope-ebpf-refused-")
        os.chmod(workdir, 0o777)
        agent = None
        try:
            env = {"GPUSCOPE_SIM_KERNEL_LOG": ""}
            original = subprocess.Popen

            def as_nobody(*args, **kwargs):
                kwargs["preexec_fn"] = lambda: (os.setgid(65534), os.setuid(65534))
                return original(*args, **kwargs)

            subprocess.Popen = as_nobody
            try:
                agent = harness.Agent(AGENT, SIM, SCENARIO, ["--ebpf", "--ebpf.watch-dir", workdir], env=env)
            finally:
                subprocess.Popen = original
            for program in ("cuda", "connect", "files"):
                wait_for(lambda: metric(agent, "gpuscope_ebpf_program_loaded", program=program) == 0, 30,
                         f"{program} reported as not loaded")
            self.assertGreaterEqual(metric(agent, "gpuscope_ebpf_program_errors_total", stage="load"), 3)
            self.assertIsNotNone(metric(agent, "DCGM_FI_DEV_GPU_UTIL"))
            self.assertIn("ebpf program not loaded", agent.read_log())
            self.assertIsNone(agent.process.poll())
        finally:
            if agent is not None:
                agent.finish(show_log=harness.failed(self))
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""The Security view's data in the demo fleet (tests/integration/fleet.py, Fleet(security_node=...)): one
node's agent runs with --ebpf (when this runs as root on a kernel that loads the programs) and reads Falco's
and Tetragon's JSON, and a job process of that node's Slurm job does what the view is about, every few
seconds: CUDA allocations through the stand-in libcuda (sim/cuda), now and then one too large; checkpoint
writes and dataset reads below the watched directories; connections inside and outside the allow-list; and
another user (nobody) reads its checkpoints now and then. The job process is tests/integration/ebpf_job.py
in a Slurm job cgroup of this fleet's own (memory:/slurm_<fleet>/uid_0/job_<id>/step_0), so that fleets
run side by side do not share one. Without root the agent's programs report not loaded and the job process
is not started; the Falco and Tetragon files are read either way."""

import os
import shutil
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "security")
MIB = 1 << 20


class _Listener:
    """A TCP listener on 127.0.0.1 that accepts and closes every connection."""

    def __init__(self):
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.port = self.socket.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            connection.close()

    def close(self):
        self.socket.close()


class SecurityNode:
    def __init__(self, home, sim_library, scenario, job_id):
        self.home = home
        self.libcuda = os.path.join(os.path.dirname(sim_library), "cuda", "libcuda.so.1")
        self.scenario = scenario
        self.job_id = job_id
        self.checkpoints = os.path.join(home, "checkpoints")
        self.datasets = os.path.join(home, "datasets")
        self.falco = os.path.join(home, "falco.json")
        self.tetragon = os.path.join(home, "tetragon.log")
        self.root = os.geteuid() == 0
        self.cgroup = (f"/sys/fs/cgroup/memory/slurm_gpuscope{os.getpid()}/uid_0/job_{job_id}/step_0"
                       if self.root else None)
        self.allowed, self.denied = _Listener(), _Listener()
        self.job = None
        self.stopping = threading.Event()
        self.thread = None
        for d in (self.checkpoints, self.datasets):
            os.makedirs(d, exist_ok=True)
        # nobody, who reads a checkpoint, must get through the fleet's work dir and the node's.
        for d in (home, os.path.dirname(home), os.path.dirname(os.path.dirname(home))):
            os.chmod(d, 0o755)
        for d in (self.checkpoints, self.datasets):
            os.chmod(d, 0o755)
        with open(os.path.join(self.datasets, "shard-0000.tar"), "wb") as f:
            f.write(b"\0" * MIB)
        os.chmod(os.path.join(self.datasets, "shard-0000.tar"), 0o644)
        self._append_security_events()

    def agent_args(self):
        args = ["--events.falco-file", self.falco, "--events.tetragon-file", self.tetragon]
        if self.root:
            args += ["--ebpf", "--ebpf.watch-dir", self.checkpoints, "--ebpf.watch-dir", self.datasets,
                     "--ebpf.allow", f"127.0.0.1/32:{self.allowed.port}", "--ebpf.cuda-library", self.libcuda]
        return args

    def _append_security_events(self):
        for name, path in (("falco.jsonl", self.falco), ("tetragon.jsonl", self.tetragon)):
            with open(os.path.join(FIXTURES, name), "rb") as f:
                harness.append(path, f.read())

    def start(self, agent):
        """Starts the job process once the agent's programs are loaded (nothing without root)."""
        if not self.root or not os.path.exists(self.libcuda):
            return
        try:
            harness.wait_for(lambda: harness.metric(agent, "gpuscope_ebpf_program_loaded", program="files")
                             is not None, 30, "the security node's eBPF programs")
        except AssertionError:
            return
        os.makedirs(self.cgroup, exist_ok=True)
        jobdir = os.path.join(self.home, "job")
        os.makedirs(jobdir, exist_ok=True)
        self.job = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "ebpf_job.py"), os.path.join(self.cgroup, "cgroup.procs"), jobdir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "GPUSCOPE_SIM_SCENARIO": self.scenario})
        if self.job.stdout.readline().strip() != "ready" or not self._ask(f"load {self.libcuda}"):
            return
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _ask(self, line):
        try:
            self.job.stdin.write(line + "\n")
            self.job.stdin.flush()
            return self.job.stdout.readline().strip()
        except (BrokenPipeError, ValueError, OSError):
            return ""

    def _run(self):
        live, step = [], 0
        while not self.stopping.is_set():
            answer = self._ask(f"alloc {256 * MIB}")
            if answer.startswith("ok "):
                live.append(answer.split()[1])
            if len(live) > 8:
                self._ask(f"free {live.pop(0)}")
            self._ask(f"write ../checkpoints/step_{step % 3}.pt {4 * MIB}")
            self._ask(f"readat {self.datasets} shard-0000.tar")
            self._ask(f"connect 127.0.0.1 {self.allowed.port}")
            self._ask(f"connect 127.0.0.1 {self.denied.port}")
            if step % 6 == 0:
                self._ask(f"alloc {1 << 42}")  # past the GPU's memory: CUDA_ERROR_OUT_OF_MEMORY
                checkpoint = os.path.join(self.checkpoints, f"step_{step % 3}.pt")
                if os.path.exists(checkpoint):  # another user reads the job's checkpoint
                    os.chmod(checkpoint, 0o644)
                    subprocess.run(["/bin/cat", checkpoint], stdout=subprocess.DEVNULL, check=False,
                                   preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
            if step % 12 == 11:
                self._append_security_events()
            step += 1
            self.stopping.wait(5)

    def stop(self):
        self.stopping.set()
        if self.job is not None and self.job.poll() is None:
            try:
                self.job.stdin.write("exit\n")
                self.job.stdin.close()
                self.job.wait(timeout=5)
            except (BrokenPipeError, OSError, ValueError, subprocess.TimeoutExpired):
                self.job.kill()
                self.job.wait()
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.allowed.close()
        self.denied.close()
        if self.cgroup:
            path = self.cgroup
            for _ in range(4):  # step_0, job, uid_0, slurm_gpuscope<pid>
                try:
                    os.rmdir(path)
                except OSError:
                    break
                path = os.path.dirname(path)
        shutil.rmtree(self.home, ignore_errors=True)

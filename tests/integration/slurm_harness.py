"""A real single-node Slurm 22.05 (Debian packages munge, slurmctld, slurmd, slurm-client) for gpuscope's
integration tests: started as root on loopback in a temp dir with 8 fake GPUs as gres, two partitions
(`gpu`, the default, and `debug`), optional Prolog/Epilog scripts and a non-root test user. Standard
library only.

    with SlurmCluster(prolog="deploy/slurm/prolog.sh", script_env={"GPUSCOPE_MAPPING_DIR": d}) as cluster:
        job = cluster.sbatch("sleep 30", ["--gres=gpu:2"], user="alice", account="physics")
        cluster.wait_for_state(job, "RUNNING")

Follows the recipe of ../shared/notes/components.md, with these differences (all so that several
clusters, or a cluster and the engineer's own, can run on one machine at once):
- its own munged on a socket in the temp dir (`AuthInfo=socket=...`) instead of the system one;
- free loopback ports for slurmctld and slurmd instead of 6817/6818;
- controller state and slurmd spool live in the same fresh temp dir, so they are always wiped together
  (the "reissued job credential" pitfall cannot happen).
Every client command runs under `timeout` (a client blocks ~10 s when no controller answers)."""

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import harness

SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
MUNGED = "/usr/sbin/munged"
NVIDIA_MAJOR = 195
CLIENT_TIMEOUT_S = 10


def slurm_available():
    """True when this machine can run SlurmCluster: root, and the Debian packages installed."""
    return (os.geteuid() == 0 and all(os.access(p, os.X_OK) for p in (SLURMCTLD, SLURMD, MUNGED))
            and shutil.which("sbatch") is not None)


def parse_scontrol_record(line):
    """{key: value} of one `scontrol show ... -o` line. Values may contain spaces (Command=, WorkDir=,
    JobName=, Comment=...): a value runs up to the next ` Key=` where Key is a known-looking token."""
    fields = {}
    for match in re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(.*?)(?=\s[A-Za-z][A-Za-z0-9_:/]*=|\s*$)",
                             line.strip()):
        fields[match.group(1)] = match.group(2)
    return fields


class SlurmCluster:
    """One slurmctld + one slurmd (node = this host's name, 127.0.0.1) + a private munged, as root."""

    def __init__(self, prolog=None, epilog=None, script_env=None, gpus=8, test_user="alice",
                 extra_conf=""):
        if os.geteuid() != 0:
            raise RuntimeError("SlurmCluster must run as root")
        self.prolog = prolog
        self.epilog = epilog
        self.script_env = dict(script_env or {})
        self.gpus = gpus
        self.test_user = test_user
        self.extra_conf = extra_conf
        self.node = socket.gethostname().split(".")[0]
        self.dir = None
        self.processes = {}  # name -> Popen
        self.logs = {}
        self.startup_seconds = None

    # ---- life cycle -------------------------------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        """Starts everything and waits until the node is idle; on any failure stops what was started."""
        began = time.monotonic()
        try:
            self._ensure_user()
            self._make_tree()
            self._start_munge()
            self._write_config()
            self.start_controller()
            self._spawn("slurmd", [SLURMD, "-D", "-N", self.node])
            harness.wait_for(self._node_idle, 30, "the node to be idle in sinfo")
        except BaseException:
            logs = self.read_logs()
            self.stop()
            raise RuntimeError(f"Slurm did not start; logs:\n{logs}") from None
        self.startup_seconds = time.monotonic() - began
        return self

    def stop(self):
        """Kills slurmd, slurmctld, munged and every job process, removes the temp dir. Never raises."""
        for name in ("slurmd", "slurmctld", "munged"):
            self._terminate(name)
        if self.dir:
            self._kill_leftover_jobs()
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def stop_controller(self):
        """Stops slurmctld only (jobs keep running under slurmd), as if the controller were down."""
        self._terminate("slurmctld")

    def start_controller(self):
        """(Re)starts slurmctld; it recovers its state (running jobs) from the state dir."""
        self._spawn("slurmctld", [SLURMCTLD, "-D", "-i"])
        harness.wait_for(lambda: self.run_client(["scontrol", "ping"], check=False).returncode == 0, 30,
                         "slurmctld to answer scontrol ping")

    # ---- clients ----------------------------------------------------------------------------------

    @property
    def env(self):
        """The environment a Slurm client (or the agent's scontrol) needs to talk to this cluster."""
        environment = dict(os.environ)
        environment["SLURM_CONF"] = self.conf_path
        return environment

    def run_client(self, argv, user=None, check=True, timeout=CLIENT_TIMEOUT_S, input_text=None):
        """Runs a Slurm client command (as `user` if given) under `timeout`; returns CompletedProcess."""
        command = ["timeout", "-k", "2", str(timeout), *argv]
        if user and user != "root":
            command = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={self.conf_path}", *command]
        result = subprocess.run(command, env=self.env, capture_output=True, text=True, input=input_text,
                                cwd=self.job_dir)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip()}")
        return result

    def sbatch(self, script, args=(), user=None, account=None, partition=None):
        """Submits `script` (a shell command line, run with --wrap) and returns the job id as a string.
        `args` are extra sbatch options (e.g. ["--gres=gpu:2", "--array=0-3"])."""
        argv = ["sbatch", "--parsable", f"--chdir={self.job_dir}", f"--output={self.job_dir}/slurm-%j.out"]
        if account:
            argv.append(f"--account={account}")
        if partition:
            argv.append(f"--partition={partition}")
        argv += [*args, "--wrap", script]
        out = self.run_client(argv, user=user).stdout.strip()
        return out.split(";")[0]

    def scancel(self, job_id, user=None):
        self.run_client(["scancel", str(job_id)], user=user)

    def requeue(self, job_id):
        self.run_client(["scontrol", "requeue", str(job_id)])

    def show_job_raw(self, job_ids=None):
        """The raw `scontrol show job -o [ids]` text (one job per line)."""
        argv = ["scontrol", "show", "job", "-o"]
        if job_ids:
            argv.append(",".join(str(j) for j in job_ids))
        return self.run_client(argv, check=False).stdout

    def show_job(self, job_id):
        """{key: value} of `scontrol show job -o ID`, or {} when Slurm no longer knows the job."""
        result = self.run_client(["scontrol", "show", "job", "-o", str(job_id)], check=False)
        if result.returncode != 0:
            return {}
        lines = [line for line in result.stdout.splitlines() if line.strip()]
        return parse_scontrol_record(lines[0]) if lines else {}

    def squeue(self):
        """[{job_id, state, user, account, partition, name}] of every job in the queue."""
        out = self.run_client(["squeue", "-h", "-o", "%i|%T|%u|%a|%P|%j"]).stdout
        keys = ("job_id", "state", "user", "account", "partition", "name")
        return [dict(zip(keys, line.split("|", 5))) for line in out.splitlines() if line.strip()]

    def job_state(self, job_id):
        """JobState of the job ("PENDING", "RUNNING", "COMPLETED", ...) or "" when unknown."""
        return self.show_job(job_id).get("JobState", "")

    def wait_for_state(self, job_id, states, timeout=30):
        """Waits until the job's state is one of `states` (a string or a collection); returns it."""
        wanted = {states} if isinstance(states, str) else set(states)
        return harness.wait_for(lambda: self.job_state(job_id) if self.job_state(job_id) in wanted else None,
                                timeout, f"job {job_id} in {sorted(wanted)}")

    def job_output(self, job_id):
        path = os.path.join(self.job_dir, f"slurm-{job_id}.out")
        return open(path).read() if os.path.exists(path) else ""

    def read_logs(self):
        """Every daemon log, for failure messages."""
        text = []
        for name, path in sorted(self.logs.items()):
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    text.append(f"--- {name} ---\n{f.read()[-4000:]}")
        return "\n".join(text)

    # ---- internals --------------------------------------------------------------------------------

    def _ensure_user(self):
        if self.test_user:
            try:
                pwd.getpwnam(self.test_user)
            except KeyError:
                subprocess.run(["useradd", "-m", self.test_user], check=True, capture_output=True)

    def _make_tree(self):
        self.dir = tempfile.mkdtemp(prefix="gpuscope-slurm-")
        os.chmod(self.dir, 0o755)  # slurm, munge and the test user traverse it
        slurm = pwd.getpwnam("slurm")
        munge = pwd.getpwnam("munge")
        for sub, owner, mode in (("state", slurm, 0o755), ("log", slurm, 0o755), ("spool", None, 0o755),
                                 ("run", None, 0o755), ("dev", None, 0o755), ("scripts", None, 0o755),
                                 ("jobs", None, 0o1777), ("munge", munge, 0o755)):
            path = os.path.join(self.dir, sub)
            os.mkdir(path)
            os.chmod(path, mode)
            if owner:
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self.conf_path = os.path.join(self.dir, "slurm.conf")
        self.job_dir = os.path.join(self.dir, "jobs")
        self.dev_dir = os.path.join(self.dir, "dev")
        # Fake GPUs must be character devices: slurmd rejects plain files ("is not a valid character or
        # block device") and the job then gets no GPU indices.
        for n in range(self.gpus):
            os.mknod(os.path.join(self.dev_dir, f"nvidia{n}"), 0o666 | 0o020000, os.makedev(NVIDIA_MAJOR, n))

    def _start_munge(self):
        munge_dir = os.path.join(self.dir, "munge")
        self.munge_socket = os.path.join(munge_dir, "munge.socket")
        self._spawn("munged", ["runuser", "-u", "munge", "--", MUNGED, "-F", "-f",
                               f"--socket={self.munge_socket}",
                               f"--pid-file={munge_dir}/munged.pid",
                               f"--seed-file={munge_dir}/munged.seed",
                               f"--log-file={munge_dir}/munged.log"])
        harness.wait_for(lambda: os.path.exists(self.munge_socket), 10, "munged's socket")

    def _wrapper(self, name, script):
        """A wrapper that exports script_env and execs the real script, so Slurm runs it with our env."""
        path = os.path.join(self.dir, "scripts", name)
        exports = "".join(f"export {k}={shell_quote(v)}\n" for k, v in sorted(self.script_env.items()))
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\n{exports}exec {shell_quote(os.path.abspath(script))} \"$@\"\n")
        os.chmod(path, 0o755)
        return path

    def _write_config(self):
        d = self.dir
        self.ctld_port = harness.free_port()
        self.slurmd_port = harness.free_port()
        scripts = ""
        if self.prolog:
            scripts += f"Prolog={self._wrapper('prolog', self.prolog)}\n"
        if self.epilog:
            scripts += f"Epilog={self._wrapper('epilog', self.epilog)}\n"
        if scripts:
            scripts += "PrologFlags=Alloc\n"
        last = self.gpus - 1
        with open(self.conf_path, "w") as f:
            f.write(f"""ClusterName=gpuscope-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=300
SlurmctldTimeout=300
MinJobAge=300
KillWait=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,defer=false
{scripts}{self.extra_conf}
NodeName={self.node} NodeAddr=127.0.0.1 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=20000 Gres=gpu:{self.gpus} State=UNKNOWN
PartitionName=gpu Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
PartitionName=debug Nodes={self.node} MaxTime=INFINITE State=UP
""")
        with open(os.path.join(d, "gres.conf"), "w") as f:
            f.write(f"AutoDetect=off\nNodeName={self.node} Name=gpu File={self.dev_dir}/nvidia[0-{last}]\n")
        with open(os.path.join(d, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nConstrainCores=no\nConstrainDevices=no\nConstrainRAMSpace=no\n")

    def _spawn(self, name, argv):
        log_path = os.path.join(self.dir, "log", f"{name}.stdout")
        self.logs[name] = log_path
        if name in ("slurmctld", "slurmd"):
            self.logs[name + ".log"] = os.path.join(self.dir, "log", f"{name}.log")
        log = open(log_path, "a")
        self.processes[name] = subprocess.Popen(argv, env=self.env if name != "munged" else None,
                                                stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)
        log.close()
        time.sleep(0.05)
        if self.processes[name].poll() is not None:
            raise RuntimeError(f"{name} exited with {self.processes[name].returncode}")

    def _terminate(self, name):
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()

    def _kill_leftover_jobs(self):
        """slurmstepd and job processes outlive slurmd: kill those whose command line or environment
        names this cluster's slurm.conf or job dir (never anything else)."""
        marker = self.dir.encode()
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
                with open(f"/proc/{pid}/environ", "rb") as f:
                    environ = f.read()
            except OSError:
                continue
            if marker in cmdline or marker in environ:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass

    def _node_idle(self):
        for name in ("slurmctld", "slurmd", "munged"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                raise AssertionError(f"{name} is not running")
        # One line per (node, partition); "idle*" (not responding) does not count.
        result = self.run_client(["sinfo", "-h", "-N", "-o", "%T"], check=False, timeout=3)
        if result.returncode != 0 or set(result.stdout.split()) != {"idle"}:
            return False
        node = self.run_client(["scontrol", "show", "node", "-o", self.node], check=False, timeout=3).stdout
        if "SlurmdStartTime=None" in node or "SlurmdStartTime=" not in node:
            return False  # slurmd has not registered yet
        # slurmctld's scheduler logs its parameters on its first pass, ~3 s after start; a job submitted
        # before that waits for it, so "ready" means after it.
        with open(self.logs["slurmctld.log"], errors="replace") as f:
            return "SchedulerParameters=" in f.read()


def shell_quote(value):
    return "'" + str(value).replace("'", "'\"'\"'") + "'"

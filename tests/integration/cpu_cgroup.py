"""Cgroups of the CPU controller for the tests that need processes slowed down (or favoured) for real,
without changing their code. Standard library only; needs root.

    job = CpuCgroup("gpuscope-test-1234")     # a fresh cgroup at the top of the cpu hierarchy
    job.weight(64)                             # 64 times the default share of CPU time under contention
    ranks, slow = job.child("ranks"), job.child("slow")
    ranks.add(pid)                             # the whole process (every thread) moves into it
    slow.limit(0.2)                            # 20 % of one CPU for whatever moves into `slow`
    job.remove()                               # processes back where they were, cgroups removed

On a cgroup v2 host (the unified hierarchy has the `cpu` controller) the limit is `cpu.max` ("QUOTA
PERIOD" in microseconds) and the weight `cpu.weight` (default 100). On a host whose `cpu` controller is
mounted as cgroup v1 (a hybrid hierarchy, as on this project's test machines) the same settings are
written in their v1 form: `cpu.cfs_quota_us` and `cpu.cfs_period_us`, `cpu.shares` (default 1024). The
kernel's CFS bandwidth control throttles a group once it has used its quota in a period, until the next
period begins. Processes live only in leaf cgroups (cgroup v2 allows no processes in a group whose
children have the controller), so the same tree works on both.

Not thread-safe: one test drives one tree."""

import os

CGROUP_ROOT = "/sys/fs/cgroup"


def _read(path):
    with open(path) as f:
        return f.read()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def cgroup_cpu_layout(root=CGROUP_ROOT):
    """("v2", dir of the unified hierarchy) when it has the cpu controller, else ("v1", dir of the cpu
    controller's v1 hierarchy) when that exists with CFS bandwidth control, else (None, why not)."""
    controllers = os.path.join(root, "cgroup.controllers")
    if os.path.exists(controllers) and "cpu" in _read(controllers).split():
        return "v2", root
    v1 = os.path.join(root, "cpu")
    if os.path.exists(os.path.join(v1, "cpu.cfs_quota_us")):
        return "v1", v1
    return None, f"neither {controllers} lists the cpu controller nor {v1} has cpu.cfs_quota_us"


def cpu_cgroups_unavailable(root=CGROUP_ROOT):
    """Why CpuCgroup cannot work here, or None when it can."""
    if os.geteuid() != 0:
        return "not root: cgroups are not writable"
    version, where = cgroup_cpu_layout(root)
    return None if version else where


class CpuCgroup:
    """One cgroup of the cpu controller: a quota, a weight, processes, children."""

    def __init__(self, name, parent=None, root=CGROUP_ROOT):
        self.version, self.base = cgroup_cpu_layout(root)
        if self.version is None:
            raise RuntimeError(f"no cgroup cpu controller: {self.base}")
        above = parent.dir if parent else self.base
        if self.version == "v2":
            # A group's children get the cpu controller only when the group delegates it.
            subtree = os.path.join(above, "cgroup.subtree_control")
            if "cpu" not in _read(subtree).split():
                _write(subtree, "+cpu")
        self.dir = os.path.join(above, name)
        os.mkdir(self.dir)
        self.children = []
        self.origins = {}  # pid -> the cgroup directory it came from

    def child(self, name):
        """A new cgroup inside this one."""
        group = CpuCgroup(name, parent=self)
        self.children.append(group)
        return group

    def add(self, pid):
        """Moves process `pid` with all its threads into the cgroup. Raises OSError when it is gone."""
        self.origins[pid] = self._cgroup_of(pid)
        _write(os.path.join(self.dir, "cgroup.procs"), str(pid))

    def limit(self, fraction, period_us=100_000):
        """Lets the cgroup's processes run `fraction` of one CPU: a quota of fraction × period per period."""
        quota_us = max(1000, int(fraction * period_us))  # the kernel's minimum quota is 1 ms
        if self.version == "v2":
            _write(os.path.join(self.dir, "cpu.max"), f"{quota_us} {period_us}")
        else:
            _write(os.path.join(self.dir, "cpu.cfs_period_us"), str(period_us))
            _write(os.path.join(self.dir, "cpu.cfs_quota_us"), str(quota_us))

    def weight(self, factor):
        """Gives the cgroup `factor` times the default share of CPU time when CPUs are contended."""
        if self.version == "v2":
            _write(os.path.join(self.dir, "cpu.weight"), str(min(10000, max(1, int(100 * factor)))))
        else:
            _write(os.path.join(self.dir, "cpu.shares"), str(min(262144, max(2, int(1024 * factor)))))

    def throttled_us(self):
        """Microseconds the cgroup's processes were held back by the quota so far (cpu.stat)."""
        for line in _read(os.path.join(self.dir, "cpu.stat")).splitlines():
            key, _, value = line.partition(" ")
            if key == "throttled_usec":
                return int(value)
            if key == "throttled_time":  # v1: nanoseconds
                return int(value) // 1000
        return 0

    def remove(self):
        """Removes the children, moves the processes still inside back to where they came from and removes
        the cgroup. Never raises: processes that exited meanwhile are skipped."""
        for group in self.children:
            group.remove()
        if not os.path.isdir(self.dir):
            return
        try:
            remaining = [int(p) for p in _read(os.path.join(self.dir, "cgroup.procs")).split()]
        except OSError:
            remaining = []
        for pid in remaining:
            for where in (self.origins.get(pid, self.base), self.base):
                try:
                    _write(os.path.join(where, "cgroup.procs"), str(pid))
                    break
                except OSError:
                    continue
        try:
            os.rmdir(self.dir)
        except OSError:
            pass

    def _cgroup_of(self, pid):
        """The directory of `pid`'s cgroup in this hierarchy (/proc/PID/cgroup: "ID:CONTROLLERS:PATH")."""
        for line in _read(f"/proc/{pid}/cgroup").splitlines():
            number, controllers, path = line.split(":", 2)
            if (self.version == "v2" and number == "0") or (self.version == "v1" and "cpu" in controllers.split(",")):
                return os.path.join(self.base, path.lstrip("/"))
        return self.base

#!/usr/bin/env python3
"""What the agent's eBPF programs (--ebpf: docs/design/ebpf.md) cost, written as a Markdown report.

Run as root (the programs need CAP_BPF and CAP_PERFMON), from a built tree (bench_ebpf_load,
gpuscope-agent, the NVML simulator, the stand-in libcuda.so.1 and gpuscope-sim-cuda-workload):

    sudo python3 bench/ebpf_overhead.py [--build DIR] [--out MD] [--window S] [--rounds N] [--micro-rounds N]

1. The agent's CPU (utime+stime of /proc/PID/stat, every thread) at 10,000 opens/s of files below a watched
   directory (build/bench/bench_ebpf_load opens), at 10,000 CUDA allocations/s (gpuscope-sim-cuda-workload
   through the stand-in libcuda.so.1, --live 64, so each allocation past the first 64 also frees one) and
   both together. Two agents run side by side the whole time: E with --ebpf, N without. The eBPF programs
   see every process on the node, so E cannot have an idle twin in the same window: E loaded is compared
   with E idle in the adjacent windows (the mean of the idle windows before and after), and with N in the
   same window. The windows go idle, opens, idle, cuda, idle, both, idle, ... for --rounds rounds; medians.
2. The cost per call in the kernel as the calling process sees it (bench_ebpf_load micro: its own thread
   CPU time, the BPF programs and the uprobes' traps included): open+close below the watched directory and
   elsewhere, getppid (what every syscall pays for the sys_enter/sys_exit hooks), a 4 KiB pread on a
   tracked and an untracked descriptor, cuMemAlloc_v2+cuMemFree_v2. --micro-rounds rounds of "no agent"
   then "agent with --ebpf" (the order alternating), each a fresh process; medians.
3. Records read (gpuscope_ebpf_records_total{program}), records lost (gpuscope_ebpf_records_lost_total)
   and the agents' RSS.

The agent is probed for the stand-in libcuda.so.1 from the start (--ebpf.cuda-library), not found in the
workload's maps: the CUDA windows then count from the workload's first call. Figures are reported, never
asserted (bench/README.md). Every loop is bounded in count and time; loopback only. Standard library only.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import harness  # noqa: E402  (the tests' wait loop and exposition parser, standard library only)

TICK = os.sysconf("SC_CLK_TCK")
PROGRAMS = ("cuda", "connect", "files")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def cpu_clock(pid):
    """The same CPU time to the ns: the process's CPU-time clock (clock_getcpuclockid's id for PID, its
    threads' sum_exec_runtime, of which utime+stime are the tick-granular split)."""
    return time.clock_gettime(((~pid) << 3) | 2)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def top_mappings(pid, count=6):
    """The mappings holding most of PID's RSS: [(rss KiB, name)]."""
    out, name = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                name = " ".join(fields[5:]) if len(fields) > 5 else "[anonymous]"
            elif fields and fields[0] == "Rss:":
                out.append((int(fields[1]), name))
    merged = {}
    for kib, n in out:
        merged[n] = merged.get(n, 0) + kib
    return sorted(((kib, n) for n, kib in merged.items()), reverse=True)[:count]


def by_program(metrics, name):
    return {p: metrics.get((name, frozenset({("program", p)})), 0.0) for p in PROGRAMS}


class Agent:
    """gpuscope-agent on 127.0.0.1:0 on the simulator, as tests/integration/harness.py's Agent starts it."""

    def __init__(self, args, work, name, ebpf):
        self.name = name
        self.log_path = os.path.join(work, f"agent-{name}.log")
        env = dict(os.environ, GPUSCOPE_SIM_SCENARIO=args.scenario, GPUSCOPE_SIM_KERNEL_LOG="")
        command = [args.agent, "--nvml.library", args.sim, "--web.listen-address", "127.0.0.1:0",
                   "--gpu.hostname", f"bench-{name}", "--events.state-dir", os.path.join(work, f"state-{name}")]
        if ebpf:
            command += ["--ebpf", "--ebpf.watch-dir", args.watched, "--ebpf.cuda-library", args.libcuda]
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.pid = self.process.pid
        self.port = harness.wait_for(self._port, 30, f"agent {name}'s listening line")

    def _port(self):
        if self.process.poll() is not None:
            raise RuntimeError(f"agent {self.name} exited with {self.process.returncode}: {self.read_log()}")
        match = re.search(r"gpuscope-agent listening.* port=(\d+)", self.read_log())
        return int(match.group(1)) if match else None

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def metrics(self):
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            return harness.parse_exposition(response.read().decode())

    def wait_loaded(self, timeout=20):
        """Waits until every program is loaded and the stand-in probed; on a timeout returns what is there
        (a program the kernel refused stays at 0: the report says so, with the agent's log lines)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.metrics()
            loaded = by_program(m, "gpuscope_ebpf_program_loaded")
            libraries = m.get(("gpuscope_ebpf_cuda_libraries", frozenset()), 0.0)
            if all(v == 1 for v in loaded.values()) and libraries >= 1:
                return loaded, libraries
            time.sleep(0.2)
        return loaded, libraries

    def ebpf_log_lines(self):
        return [line for line in self.read_log().splitlines()
                if "ebpf" in line and ("level=warn" in line or "level=error" in line)]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def make_tree(root, files, size):
    """root/ds/f0..f{files-1}, `size` bytes each; returns root/ds."""
    ds = os.path.join(root, "ds")
    os.makedirs(ds, exist_ok=True)
    block = os.urandom(size)
    for i in range(files):
        with open(os.path.join(ds, f"f{i}"), "wb") as f:
            f.write(block)
    return ds


def run_micro(args):
    out = subprocess.run([args.load, "micro", "--watched", args.watched_ds, "--other", args.other_ds,
                          "--other-fs", args.other_fs_ds,
                          "--library", args.libcuda, "--scale", str(args.micro_scale), "--batches", "5"],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, GPUSCOPE_SIM_SCENARIO=args.scenario))
    if out.returncode != 0:
        raise RuntimeError(f"bench_ebpf_load micro failed: {out.stderr}{out.stdout}")
    return json.loads(out.stdout)


def micro_phase(args, work):
    """Part 2: rounds of the micro timings without an agent and with an --ebpf agent, order alternating."""
    none, ebpf, loaded_seen, log_lines = [], [], None, []
    for r in range(args.micro_rounds):
        for with_agent in ((False, True) if r % 2 == 0 else (True, False)):
            if not with_agent:
                none.append(run_micro(args))
                continue
            agent = Agent(args, work, f"micro{r}", ebpf=True)
            try:
                loaded_seen = agent.wait_loaded()
                time.sleep(1)
                ebpf.append(run_micro(args))
                log_lines = agent.ebpf_log_lines()
            finally:
                agent.stop()
        print(f"ebpf_overhead: micro round {r + 1}/{args.micro_rounds} done", file=sys.stderr)
    return none, ebpf, loaded_seen, log_lines


def cpu_phase(args, work):
    """Part 1: E (--ebpf) and N (no eBPF) side by side through idle and loaded windows."""
    e = Agent(args, work, "ebpf", ebpf=True)
    n = Agent(args, work, "plain", ebpf=False)
    try:
        loaded, libraries = e.wait_loaded()
        time.sleep(5)  # every collector has run once
        rss_start = {"ebpf": rss_mib(e.pid), "plain": rss_mib(n.pid)}
        kinds = ["opens", "cuda", "both"]
        sequence = ["idle"]
        for _ in range(args.rounds):
            for kind in kinds:
                sequence += [kind, "idle"]
        windows = []
        for index, kind in enumerate(sequence):
            m0 = e.metrics()
            t0, ce0, cn0 = time.monotonic(), cpu_seconds(e.pid), cpu_seconds(n.pid)
            pe0, pn0 = cpu_clock(e.pid), cpu_clock(n.pid)
            load = []
            if kind in ("opens", "both"):
                load.append(("opens", subprocess.Popen(
                    [args.load, "opens", "--dir", args.watched_ds, "--rate", str(args.rate),
                     "--seconds", str(args.window)], stdout=subprocess.PIPE, text=True)))
            if kind in ("cuda", "both"):
                load.append(("cuda", subprocess.Popen(
                    [args.workload, "--library", args.libcuda, "--allocs-per-second", str(args.rate),
                     "--seconds", str(args.window), "--bytes", "1M", "--live", "64"],
                    stdout=subprocess.PIPE, text=True, env=dict(os.environ, GPUSCOPE_SIM_SCENARIO=args.scenario))))
            if not load:
                time.sleep(args.window)
            events = {"opens": 0, "allocations": 0, "frees": 0}
            load_seconds = 0.0
            for what, process in load:
                stdout, _ = process.communicate(timeout=args.window + 60)
                if what == "opens":
                    report = json.loads(stdout)
                    events["opens"] = report["opens"]
                    load_seconds = max(load_seconds, report["seconds"])
                else:
                    fields = dict(kv.split("=", 1) for kv in stdout.split())
                    events["allocations"] = int(fields["allocations"])
                    events["frees"] = int(fields["frees"])
                    load_seconds = max(load_seconds, float(fields["seconds"]))
            time.sleep(1.5)  # the ebpf collector reads the rings every second: the last records are in
            t1, ce1, cn1 = time.monotonic(), cpu_seconds(e.pid), cpu_seconds(n.pid)
            pe1, pn1 = cpu_clock(e.pid), cpu_clock(n.pid)
            m1 = e.metrics()
            r0, r1 = by_program(m0, "gpuscope_ebpf_records_total"), by_program(m1, "gpuscope_ebpf_records_total")
            windows.append({"kind": kind, "seconds": t1 - t0, "ebpf_cpu": (ce1 - ce0) / (t1 - t0),
                            "plain_cpu": (cn1 - cn0) / (t1 - t0), "ebpf_clock": (pe1 - pe0) / (t1 - t0),
                            "plain_clock": (pn1 - pn0) / (t1 - t0), "events": events, "load_seconds": load_seconds,
                            "records": {p: r1[p] - r0[p] for p in PROGRAMS}, "load1": os.getloadavg()[0]})
            w = windows[-1]
            print(f"ebpf_overhead: window {index + 1}/{len(sequence)} {kind}: E {w['ebpf_cpu'] * 100:.2f} % "
                  f"N {w['plain_cpu'] * 100:.2f} % records {w['records']} events {events}", file=sys.stderr)
        final = e.metrics()
        result = {"loaded": loaded, "libraries": libraries, "windows": windows, "rss_start": rss_start,
                  "rss_end": {"ebpf": rss_mib(e.pid), "plain": rss_mib(n.pid)},
                  "records_total": by_program(final, "gpuscope_ebpf_records_total"),
                  "lost_total": by_program(final, "gpuscope_ebpf_records_lost_total"),
                  "log_lines": e.ebpf_log_lines(), "mappings": top_mappings(e.pid),
                  "plain_mappings": top_mappings(n.pid, 3)}
    finally:
        e.stop()
        n.stop()
    return result


def median(values):
    return statistics.median(values) if values else float("nan")


def report(args, cpu, micro, started, load_start, load_end):
    windows = cpu["windows"]
    lines = []
    commit = subprocess.run(["git", "-C", args.root, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", args.root, "status", "--porcelain", "--", "src", "sim"], capture_output=True,
                           text=True).stdout.strip()
    built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(args.agent_mtime))
    lines.append(f"# Cost of the eBPF programs ({started}, {os.cpu_count()} cores, gpuscope {commit})\n")
    lines.append(f"The agent binary: built {built}" + (" from a working tree with uncommitted changes under src/ "
                                                        "or sim/" if dirty else "") + ".\n")
    lines.append(f"Written by `bench/ebpf_overhead.py` (load: `build/bench/bench_ebpf_load`, "
                 f"`build/sim/cuda/gpuscope-sim-cuda-workload`). Machine load (`/proc/loadavg`) at the start: "
                 f"{load_start}; at the end: {load_end}. These cores are shared with other builds: the "
                 f"figures are medians of repeated windows and still carry that noise.\n")
    lines.append("Agents: `gpuscope-agent --nvml.library build/sim/libnvidia-ml.so.1 --web.listen-address "
                 "127.0.0.1:0` on the simulator's h100-training scenario (8 GPUs, default collectors), "
                 "`GPUSCOPE_SIM_KERNEL_LOG=\"\"`; the eBPF agent adds `--ebpf --ebpf.watch-dir DIR "
                 "--ebpf.cuda-library build/sim/cuda/libcuda.so.1` (the stand-in is probed from the start, "
                 "not found later in the workload's maps). Every binary runs from a copy made at the start "
                 "(the build directory is rebuilt by others meanwhile).\n")
    loaded = ", ".join(f"{p} {int(v)}" for p, v in cpu["loaded"].items())
    lines.append(f"Programs loaded (`gpuscope_ebpf_program_loaded`): {loaded}; "
                 f"`gpuscope_ebpf_cuda_libraries` {int(cpu['libraries'])}.")
    if cpu["log_lines"]:
        lines.append("\nThe eBPF agent's warnings:\n\n```")
        lines += [line[:400] for line in cpu["log_lines"]]
        lines.append("```")
    lines.append("")

    # 1. CPU.
    lines.append(f"## 1. The agent's CPU under load\n")
    lines.append(f"E (`--ebpf`) and N (no eBPF) side by side; windows of {args.window:g} s of load (+1.5 s for "
                 f"the last ring-buffer read), idle windows as long, in the order idle, opens, idle, cuda, "
                 f"idle, both, idle, ... ({args.rounds} rounds). \"E − E idle\" subtracts the mean of E's idle "
                 f"windows just before and after; \"E − N\" subtracts N in the same window. Opens: "
                 f"open+close of 100 files of 8 KiB below the watched directory (one record each); "
                 f"allocations: cuMemAlloc_v2 of 1 MiB with at most 64 live (an allocation record and, "
                 f"past the first 64, a free record each). E, E idle and N: % of a core over the whole "
                 f"window; \"E − E idle\" and \"E − N\": the extra CPU seconds of the window over the "
                 f"seconds the load ran (% of a core while the load runs at the rate shown); µs per event: "
                 f"the extra CPU seconds over the events (opens + allocations) of the window. Medians over "
                 f"the rounds; every window below.\n")
    summary = {}
    for measure, title in (("cpu", "utime+stime of /proc/PID/stat (10 ms ticks)"),
                           ("clock", "the same CPU time to the ns (the process's CPU-time clock)")):
        lines.append(f"CPU as {title}:\n")
        lines.append("| load | events/s (achieved) | records/s read by E | E (% of a core) | E idle (adjacent) | N same window "
                     "| **E − E idle** | E − N | **agent µs per event** (vs E idle) | µs per event (vs N) |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        e_key, n_key = ("ebpf_cpu", "plain_cpu") if measure == "cpu" else ("ebpf_clock", "plain_clock")
        for kind in ("opens", "cuda", "both"):
            rows = []
            for i, w in enumerate(windows):
                if w["kind"] != kind:
                    continue
                idle = [windows[j][e_key] for j in (i - 1, i + 1)
                        if 0 <= j < len(windows) and windows[j]["kind"] == "idle"]
                idle_cpu = sum(idle) / len(idle)
                events = w["events"]["opens"] + w["events"]["allocations"]
                load_s = w["load_seconds"] or w["seconds"]
                extra_idle = (w[e_key] - idle_cpu) * w["seconds"]  # CPU seconds
                extra_plain = (w[e_key] - w[n_key]) * w["seconds"]
                rows.append({"rate": events / load_s, "records": sum(w["records"].values()) / load_s,
                             "e": w[e_key], "idle": idle_cpu, "n": w[n_key],
                             "extra_idle": extra_idle / load_s, "extra_plain": extra_plain / load_s,
                             "us_idle": extra_idle * 1e6 / events if events else float("nan"),
                             "us_plain": extra_plain * 1e6 / events if events else float("nan")})
            s = {k: median([r[k] for r in rows]) for k in rows[0]} if rows else None
            summary[(measure, kind)] = s
            if s:
                lines.append(f"| {kind} | {s['rate']:,.0f} | {s['records']:,.0f} | {s['e'] * 100:.2f} % | "
                             f"{s['idle'] * 100:.2f} % | {s['n'] * 100:.2f} % | **{s['extra_idle'] * 100:+.2f} %** | "
                             f"{s['extra_plain'] * 100:+.2f} % | **{s['us_idle']:.2f}** | {s['us_plain']:.2f} |")
        lines.append("")
    lines.append("Each window (E = the eBPF agent, N = without; records read by E by program):\n")
    lines.append("| # | load | s | opens | allocations | frees | records cuda / files / connect | E | N | E (ns clock) "
                 "| N (ns clock) | load avg |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, w in enumerate(windows):
        ev, rec = w["events"], w["records"]
        lines.append(f"| {i + 1} | {w['kind']} | {w['seconds']:.1f} | {ev['opens']:,} | {ev['allocations']:,} | "
                     f"{ev['frees']:,} | {rec['cuda']:,.0f} / {rec['files']:,.0f} / {rec['connect']:,.0f} | "
                     f"{w['ebpf_cpu'] * 100:.2f} % | {w['plain_cpu'] * 100:.2f} % | {w['ebpf_clock'] * 100:.3f} % | "
                     f"{w['plain_clock'] * 100:.3f} % | {w['load1']:.1f} |")
    lines.append("")

    # 2. Per call.
    none, ebpf, _, micro_log = micro
    lines.append("## 2. Per call, in the calling process\n")
    lines.append(f"`bench_ebpf_load micro`: each operation in batches (5 per process, the median batch), "
                 f"ns of the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: the syscall, the BPF programs "
                 f"it runs and the uprobes' traps are charged to it; time spent waiting for a core on this "
                 f"shared machine is not). {args.micro_rounds} rounds, each a fresh process with no agent and "
                 f"one with an agent started with `--ebpf` (waited for until its programs were loaded), the "
                 f"order alternating; medians over the rounds. The watched file and the other one are "
                 f"`ds/f0` (8 KiB) in the watched directory and in a directory beside it, both on a "
                 f"tmpfs mounted for the run (as checkpoints on a file system of their own), and in a "
                 f"directory on the root file system; the pread descriptors are opened after the agent "
                 f"started.\n")
    names = [("open_close_watched", "open+close below the watched directory"),
             ("open_close_other", "open+close beside it, on the watched file system (walked, not matched)"),
             ("open_close_other_fs", "open+close on the root file system (no watched directory: no walk)"),
             ("getppid", "getppid() (the sys_enter/sys_exit tax on every syscall)"),
             ("pread_tracked", "4 KiB pread, descriptor opened below the watched directory"),
             ("pread_untracked", "4 KiB pread, descriptor opened elsewhere"),
             ("cuda_alloc_free", "cuMemAlloc_v2 (1 MiB) + cuMemFree_v2, stand-in libcuda.so.1")]
    lines.append("| call | no agent (ns) | agent --ebpf (ns) | added (ns) | ratio | rounds: added ns |")
    lines.append("|---|---|---|---|---|---|")
    for key, label in names:
        a = [r[key]["cpu_ns"] for r in none]
        b = [r[key]["cpu_ns"] for r in ebpf]
        added = [y - x for x, y in zip(a, b)]
        ma, mb = median(a), median(b)
        lines.append(f"| {label} | {ma:,.0f} | {mb:,.0f} | **{mb - ma:+,.0f}** | {mb / ma:.2f}x | "
                     f"{', '.join(f'{x:+,.0f}' for x in added)} |")
    lines.append("")
    lines.append("The same in wall-clock ns (includes time the thread waited for a core):\n")
    lines.append("| call | no agent (ns) | agent --ebpf (ns) |")
    lines.append("|---|---|---|")
    for key, label in names:
        lines.append(f"| {label} | {median([r[key]['wall_ns'] for r in none]):,.0f} | "
                     f"{median([r[key]['wall_ns'] for r in ebpf]):,.0f} |")
    if micro_log:
        lines.append("\nThe micro rounds' agent warnings:\n\n```")
        lines += [line[:400] for line in micro_log]
        lines.append("```")
    lines.append("")

    # 3. Records, losses, RSS.
    lines.append("## 3. Records, losses, memory\n")
    lines.append("| | cuda | files | connect |")
    lines.append("|---|---|---|---|")
    lines.append("| `gpuscope_ebpf_records_total` at the end (E) | " +
                 " | ".join(f"{cpu['records_total'][p]:,.0f}" for p in ("cuda", "files", "connect")) + " |")
    lines.append("| `gpuscope_ebpf_records_lost_total` at the end (E) | " +
                 " | ".join(f"{cpu['lost_total'][p]:,.0f}" for p in ("cuda", "files", "connect")) + " |")
    sent_opens = sum(w["events"]["opens"] for w in windows)
    sent_allocs = sum(w["events"]["allocations"] for w in windows)
    sent_frees = sum(w["events"]["frees"] for w in windows)
    lines.append(f"\nMade by the load in the windows: {sent_opens:,} opens below the watched directory, "
                 f"{sent_allocs:,} allocations and {sent_frees:,} frees (the workload frees what is still "
                 f"live at its exit).\n")
    lines.append("| agent | RSS after start (MiB) | RSS at the end (MiB) |")
    lines.append("|---|---|---|")
    lines.append(f"| E (`--ebpf`) | {cpu['rss_start']['ebpf']:.1f} | {cpu['rss_end']['ebpf']:.1f} |")
    lines.append(f"| N (no eBPF) | {cpu['rss_start']['plain']:.1f} | {cpu['rss_end']['plain']:.1f} |")
    lines.append("\nWhere E's RSS is at the end (`/proc/PID/smaps`, Rss summed by mapping name):\n")
    lines.append("| mapping | RSS (MiB) |")
    lines.append("|---|---|")
    for kib, name in cpu["mappings"]:
        lines.append(f"| `{name}` | {kib / 1024:.1f} |")
    lines.append("\nN's largest: " + ", ".join(f"`{n}` {k / 1024:.1f} MiB" for k, n in cpu["plain_mappings"]) + ".")
    lines.append("")
    return "\n".join(lines), summary


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(root, "build"))
    parser.add_argument("--out", default=os.path.join(root, "bench", "results", "ebpf_overhead.md"))
    parser.add_argument("--window", type=float, default=15, help="seconds of each window (default 15)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of opens/cuda/both windows (default 3)")
    parser.add_argument("--micro-rounds", type=int, default=5, help="rounds of the per-call timings (default 5)")
    parser.add_argument("--micro-scale", type=float, default=1.0, help="calls per batch, x (default 1)")
    parser.add_argument("--rate", type=int, default=10000, help="opens/s and allocations/s (default 10000)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("ebpf_overhead: run as root (the eBPF programs need CAP_BPF and CAP_PERFMON)")
    if not (0 < args.window <= 300 and 1 <= args.rounds <= 20 and 1 <= args.micro_rounds <= 20):
        sys.exit("ebpf_overhead: --window 0-300 s, --rounds 1-20, --micro-rounds 1-20")
    build = os.path.abspath(args.build)
    args.root = root
    args.agent = os.path.join(build, "src/agent/gpuscope-agent")
    args.sim = os.path.join(build, "sim/libnvidia-ml.so.1")
    args.libcuda = os.path.join(build, "sim/cuda/libcuda.so.1")
    args.workload = os.path.join(build, "sim/cuda/gpuscope-sim-cuda-workload")
    args.load = os.path.join(build, "bench/bench_ebpf_load")
    args.scenario = os.path.join(root, "sim/scenarios/h100-training.yaml")
    for f in (args.agent, args.sim, args.libcuda, args.workload, args.load):
        if not os.path.exists(f):
            sys.exit(f"ebpf_overhead: {f} missing: ninja -C {build} gpuscope-agent bench_ebpf_load")

    args.agent_mtime = os.path.getmtime(args.agent)
    work = tempfile.mkdtemp(prefix="gpuscope-bench-ebpf-")
    try:
        # Copies: the build directory may be rebuilt while this runs (a binary being relinked cannot be
        # started); the agent probes and the load calls the same copy of the stand-in libcuda.so.1.
        os.makedirs(os.path.join(work, "bin"))
        for attr in ("agent", "sim", "libcuda", "workload", "load"):
            copy = os.path.join(work, "bin", os.path.basename(getattr(args, attr)))
            shutil.copy2(getattr(args, attr), copy)
            setattr(args, attr, copy)
        # As on a node whose checkpoints and datasets have a file system of their own: the watched directory
        # and a directory beside it on a tmpfs mounted for the run; the third directory on the root file
        # system, which holds no watched directory (its opens skip the walk).
        args.fs = os.path.join(work, "fs")
        os.makedirs(args.fs)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "gpuscope-bench", args.fs], check=True)
        args.watched = os.path.join(args.fs, "watched")
        args.watched_ds = make_tree(args.watched, 100, 8192)
        args.other_ds = make_tree(os.path.join(args.fs, "other"), 100, 8192)
        args.other_fs_ds = make_tree(os.path.join(work, "rootfs"), 100, 8192)
        started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
        load_start = open("/proc/loadavg").read().split()[:3]
        micro = micro_phase(args, work)
        cpu = cpu_phase(args, work)
        load_end = open("/proc/loadavg").read().split()[:3]
        text, summary = report(args, cpu, micro, started, " ".join(load_start), " ".join(load_end))
    finally:
        if getattr(args, "fs", None):
            subprocess.run(["umount", "-l", args.fs], check=False)
        shutil.rmtree(work, ignore_errors=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    print(f"ebpf_overhead: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the DCGM backend (--dcgm: docs/design/dcgm.md) costs the agent, written as a Markdown report.

    python3 bench/dcgm_overhead.py [--build DIR] [--out MD] [--window S] [--rounds N] [--scenario FILE]

Three agents run side by side on the same A100 scenario (no GPM: the profiling fields come from DCGM
alone), each on the NVML stand-in:
  N  --dcgm off: NVML only (what a node without DCGM pays);
  E  --dcgm.mode embedded with the stand-in libdcgm.so.4: the profiling fields, MIG instances and health
     watches from DCGM inside the agent;
  P  the same, with profiling paused through the API (no profiling reads, DCGM's module paused).
The stand-in libdcgm.so.4 computes its values from the simulator's physics inside the agent's process,
as the NVML stand-in does: E's extra CPU holds the stand-in's work too, which real DCGM does in its own
engine (hostengine mode: nv-hostengine's process), so E - N is an upper bound of the agent's own cost.

For --rounds rounds, --window seconds each: CPU of each agent (utime+stime, /proc/PID/stat), RSS, series
scraped. Figures are reported, never asserted (bench/README.md). Loopback only; standard library only.
"""

import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import harness  # noqa: E402
from ebpf_overhead import TICK, cpu_seconds, rss_mib  # noqa: E402  (the same /proc readings)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


class Agent:
    def __init__(self, binary, sim, scenario, work, name, extra):
        self.name = name
        self.log_path = os.path.join(work, f"agent-{name}.log")
        env = dict(os.environ, GPUSCOPE_SIM_SCENARIO=scenario, GPUSCOPE_SIM_KERNEL_LOG="")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [binary, "--nvml.library", sim, "--web.listen-address", "127.0.0.1:0", "--gpu.hostname",
             f"bench-{name}", *extra], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.pid = self.process.pid
        self.port = harness.wait_for(self._port, 30, f"agent {name}'s listening line")

    def _port(self):
        if self.process.poll() is not None:
            raise RuntimeError(f"agent {self.name} exited: {open(self.log_path).read()}")
        match = re.search(r"gpuscope-agent listening.* port=(\d+)", open(self.log_path).read())
        return int(match.group(1)) if match else None

    def scrape(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            return harness.parse_exposition(response.read().decode())

    def stop(self):
        harness.terminate(self.process)
        self.log.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "dcgm_overhead.md"))
    parser.add_argument("--window", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default=os.path.join(ROOT, "sim", "scenarios", "a100-inference.yaml"))
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="gpuscope-dcgm-bench-")
    # Copies: others may rebuild the build directory meanwhile.
    binary = shutil.copy(os.path.join(args.build, "src", "agent", "gpuscope-agent"), work)
    sim = shutil.copy(os.path.join(args.build, "sim", "libnvidia-ml.so.1"), work)
    dcgm = shutil.copy(os.path.join(args.build, "sim", "libdcgm.so.4"), work)
    token = os.path.join(work, "profiling.token")
    with open(token, "w") as f:
        f.write("bench-token\n")
    load_start = open("/proc/loadavg").read().split()[:3]
    agents = {
        "N": Agent(binary, sim, args.scenario, work, "N", ["--dcgm", "off"]),
        "E": Agent(binary, sim, args.scenario, work, "E", ["--dcgm.library", dcgm, "--dcgm.mode", "embedded"]),
        "P": Agent(binary, sim, args.scenario, work, "P", ["--dcgm.library", dcgm, "--dcgm.mode", "embedded",
                                                           "--profiling.token-file", token]),
    }
    try:
        def profiling(agent):
            return any(name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" for name, _ in agent.scrape())
        harness.wait_for(lambda: profiling(agents["E"]) and profiling(agents["P"]), 60, "DCGM profiling fields")
        request = urllib.request.Request(
            f"http://127.0.0.1:{agents['P'].port}/api/v1/profiling/pause",
            data=b'{"duration_seconds": 86400, "reason": "bench"}', method="POST",
            headers={"Authorization": "Bearer bench-token"})
        urllib.request.urlopen(request, timeout=10).read()
        harness.wait_for(lambda: not profiling(agents["P"]), 30, "P's profiling fields gone")

        rows = {name: [] for name in agents}
        for _ in range(args.rounds):
            before = {n: cpu_seconds(a.pid) for n, a in agents.items()}
            start = time.monotonic()
            time.sleep(args.window)
            elapsed = time.monotonic() - start
            for n, a in agents.items():
                rows[n].append(100 * (cpu_seconds(a.pid) - before[n]) / elapsed)
        series = {n: len(a.scrape()) for n, a in agents.items()}
        rss = {n: rss_mib(a.pid) for n, a in agents.items()}
        threads = {n: thread_count(a.pid) for n, a in agents.items()}
    finally:
        for agent in agents.values():
            agent.stop()
    load_end = open("/proc/loadavg").read().split()[:3]
    median = {n: statistics.median(v) for n, v in rows.items()}
    delta = {n: round(median[n] - median["N"], 2) + 0.0 for n in ("E", "P")}  # no "-0.00"
    resolution = 100 / TICK / args.window  # one clock tick over a window, in % of a core

    lines = [
        f"# Cost of the DCGM backend ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%MZ}, "
        f"{os.cpu_count()} cores)",
        "",
        f"Written by `bench/dcgm_overhead.py`. Scenario `{os.path.relpath(args.scenario, ROOT)}` (A100: no GPM, so "
        "every DCGM_FI_PROF_* field comes from DCGM). Machine load at the start: "
        f"{' '.join(load_start)}; at the end: {' '.join(load_end)} (shared cores: medians of "
        f"{args.rounds} windows of {args.window:.0f} s, all three agents in every window).",
        "",
        "| agent | what | CPU (% of a core, median) | each window | RSS (MiB) | threads | series |",
        "|---|---|---|---|---|---|---|",
    ]
    what = {"N": "`--dcgm off`: NVML only",
            "E": "`--dcgm.mode embedded`, stand-in libdcgm.so.4 (profiling, MIG, health)",
            "P": "the same, profiling paused through the API"}
    for n in ("N", "E", "P"):
        lines.append(f"| {n} | {what[n]} | {median[n]:.2f} % | "
                     f"{', '.join(f'{v:.2f}' for v in rows[n])} | {rss[n]:.1f} | {threads[n]} | {series[n]} |")
    lines += [
        "",
        f"E − N: **{delta['E']:+.2f} %** of a core, {rss['E'] - rss['N']:+.1f} MiB, "
        f"{series['E'] - series['N']:+d} series; P − N: {delta['P']:+.2f} %. One clock tick over a window is "
        f"{resolution:.3f} % of a core: differences below it are noise.",
        "",
        "E's extra CPU includes the stand-in's own work (it integrates the simulator's physics for every "
        "watched entity and field inside the agent's process, as real DCGM does in its embedded engine or in "
        "nv-hostengine); with `--dcgm.mode hostengine` that work is nv-hostengine's, and the agent keeps only "
        "its backend thread's reads (one dcgmEntitiesGetLatestValues a second and one dcgmHealthCheck every "
        "10 s).",
    ]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

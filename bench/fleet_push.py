#!/usr/bin/env python3
"""The cost of the push path at fleet scale: gpuscope-fleet's nodes push by remote_write into the Thanos
Receive ring of deploy/thanos/ (three receivers, replication factor 2, query and rule on the mixin, started
by tests/integration/thanos.py from the reference files), at several fleet sizes in one run.

Per size: three fleet processes of N/3 nodes of sim/fleets/mixed.yaml, each pushing to its own receiver
(as a load balancer spreads nodes; every receiver forwards each series to its two places in the ring) every
15 s with deploy/thanos/agent-remote-write.yaml. After a warm-up the measuring window reads, from /proc and
the components' own metrics: samples the nodes sent and the bytes on the wire (gpuscope_remote_write_samples_
sent_total, gpuscope_sink_sent_bytes_total, summed over every node); samples the receivers appended (both
replicas: prometheus_tsdb_head_samples_appended_total); CPU (cores) and RSS of the receivers, the query and
rule processes and the fleet; the receivers' disk (WAL and head chunks: no block is cut in a few minutes, so
bytes per sample here is the write-ahead path's, not a compacted block's); failed or dropped pushes.

Not part of the test run. Writes a Markdown table with the date, commit and load to OUT.
Usage: bench/fleet_push.py [--build DIR] [--thanos BIN] [--sizes 10,100,1000] [--warmup S] [--window S] [--out F]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402
import thanos  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_seconds(pid):
    """User + system CPU seconds of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def disk_bytes(path):
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(directory, name)).st_blocks * 512
            except OSError:
                pass
    return total


def metric_sum(url, name, timeout=10):
    """Sum of every sample of `name` on the /metrics at `url` (0 when absent)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        text = response.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and (line[len(name)] in " {"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class FleetPushers:
    """Three gpuscope-fleet processes of about nodes/3 nodes each, process i pushing to receiver i."""

    def __init__(self, fleet_binary, sim, ring, nodes, workdir):
        with open(os.path.join(thanos.DEPLOY, "agent-remote-write.yaml")) as f:
            reference = re.sub(r",\s*instance=[^\],]*", "", f.read())
        self.processes, self.targets, self.logs = [], [], []
        for i, receiver in enumerate(ring.receivers):
            share = nodes // 3 + (1 if i < nodes % 3 else 0)
            if share == 0:
                continue
            config = os.path.join(workdir, f"agent-{i}.yaml")
            with open(config, "w") as f:
                f.write(reference.replace("http://thanos-receive.example:19291/api/v1/receive",
                                          receiver.remote_write_url))
            description = os.path.join(workdir, f"fleet-{i}.yaml")
            with open(os.path.join(ROOT, "sim", "fleets", "mixed.yaml")) as f:
                text = f.read()
            text = re.sub(r"(?m)^nodes: .*$", f"nodes: {share}", text)
            text = re.sub(r"(?m)^hostname_prefix: .*$", f"hostname_prefix: push-{i}-node-", text)
            text = text.replace("../scenarios/", os.path.join(ROOT, "sim", "scenarios") + "/")
            with open(description, "w") as f:
                f.write(text)
            file_sd = os.path.join(workdir, f"targets-{i}.json")
            log = open(os.path.join(workdir, f"fleet-{i}.log"), "w")
            self.logs.append(log)
            self.processes.append(subprocess.Popen(
                [fleet_binary, "--fleet", description, "--file-sd", file_sd, "--nvml.library", sim,
                 "--state-dir", os.path.join(workdir, f"state-{i}"), "--log.level", "error", "--config", config],
                stdout=log, stderr=subprocess.STDOUT))
            harness.wait_for(lambda: os.path.exists(file_sd), 300, f"fleet {i}'s targets")
            with open(file_sd) as f:
                self.targets += [t for group in json.load(f) for t in group["targets"]]

    def sum(self, name):
        return sum(metric_sum(f"http://{t}/metrics", name) for t in self.targets)

    def stop(self):
        for process in self.processes:
            harness.terminate(process, timeout=120)
        for log in self.logs:
            log.close()


def measure(args, nodes):
    workdir = tempfile.mkdtemp(prefix="gpuscope-fleet-push-")
    ring = thanos.ThanosRing(args.thanos, "http://127.0.0.1:9")  # no Alertmanager: the rule's sends fail
    fleet = None
    try:
        fleet = FleetPushers(os.path.join(args.build, "sim", "fleet", "gpuscope-fleet"),
                             os.path.join(args.build, "sim", "libnvidia-ml.so.1"), ring, nodes, workdir)
        time.sleep(args.warmup)
        store = {p.name: p.process.pid for p in ring.processes}
        pushers = [p.pid for p in fleet.processes]
        def snapshot():
            return {
                "t": time.monotonic(),
                "cpu_store": {n: cpu_seconds(pid) for n, pid in store.items()},
                "cpu_fleet": sum(cpu_seconds(pid) for pid in pushers),
                "sent": fleet.sum("gpuscope_remote_write_samples_sent_total"),
                "bytes": fleet.sum("gpuscope_sink_sent_bytes_total"),
                "appended": sum(metric_sum(r.http_url + "/metrics", "prometheus_tsdb_head_samples_appended_total")
                                for r in ring.receivers),
            }
        first = snapshot()
        time.sleep(args.window)
        last = snapshot()
        seconds = last["t"] - first["t"]
        receivers = [p.name for p in ring.receivers]
        row = {
            "nodes": nodes,
            "series": metric_sum(ring.receivers[0].http_url + "/metrics", "prometheus_tsdb_head_series")
            + sum(metric_sum(r.http_url + "/metrics", "prometheus_tsdb_head_series") for r in ring.receivers[1:]),
            "sent_per_s": (last["sent"] - first["sent"]) / seconds,
            "appended_per_s": (last["appended"] - first["appended"]) / seconds,
            "wire_bytes_per_sample": (last["bytes"] - first["bytes"]) / max(1, last["sent"] - first["sent"]),
            "receivers_cores": sum(last["cpu_store"][n] - first["cpu_store"][n] for n in receivers) / seconds,
            "query_rule_cores": sum(last["cpu_store"][n] - first["cpu_store"][n] for n in ("query", "rule")) / seconds,
            "fleet_cores": (last["cpu_fleet"] - first["cpu_fleet"]) / seconds,
            "receivers_rss": sum(rss_mib(store[n]) for n in receivers),
            "fleet_rss": sum(rss_mib(pid) for pid in pushers),
            "disk": sum(disk_bytes(r.tsdb) for r in ring.receivers),
            "appended_total": last["appended"],
            "failed": fleet.sum("gpuscope_sink_failed_requests_total"),
            "dropped": fleet.sum("gpuscope_remote_write_samples_dropped_total"),
        }
        row["disk_bytes_per_sample"] = row["disk"] / max(1, row["appended_total"])
        return row
    finally:
        if fleet:
            fleet.stop()
        ring.stop()
        ring.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--thanos", help="thanos binary (default: GPUSCOPE_THANOS_BIN of the build's CMakeCache)")
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--warmup", type=float, default=60)
    parser.add_argument("--window", type=float, default=120)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "fleet_push.md"))
    args = parser.parse_args()
    if not args.thanos:
        with open(os.path.join(args.build, "CMakeCache.txt")) as f:
            found = re.search(r"^GPUSCOPE_THANOS_BIN:[A-Z]*=(.*)$", f.read(), re.M)
        args.thanos = found.group(1) if found else None
    if not args.thanos or not os.access(args.thanos, os.X_OK):
        sys.exit("fleet_push: no thanos binary (scripts/build-peers.sh thanos)")
    load_before = os.getloadavg()
    rows = []
    for nodes in [int(n) for n in args.sizes.split(",")]:
        print(f"fleet_push: {nodes} nodes ...", flush=True)
        rows.append(measure(args, nodes))
        print(json.dumps(rows[-1]), flush=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    lines = [
        "# The push path at fleet scale: gpuscope-fleet into the Thanos Receive ring of deploy/thanos/",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}, `bench/fleet_push.py` "
        f"(warm-up {args.warmup:g} s, window {args.window:g} s), 2 shared cores; load average before "
        f"{load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}.",
        "",
        "Nodes of `sim/fleets/mixed.yaml` push every 15 s (three fleet processes, each to its own receiver);",
        "three receivers with replication factor 2, query and rule (the mixin's rules) beside them. Series and",
        "appended samples count both replicas. Disk is the receivers' WAL and head chunks after warm-up plus",
        "window (no block is cut in minutes): bytes per sample on the write path, not in a compacted block.",
        "",
        "| nodes | series in the ring (x2) | samples/s sent | samples/s appended (x2) | wire bytes/sample | "
        "receivers CPU (cores) | query+rule CPU | fleet CPU | receivers RSS MiB | fleet RSS MiB | disk MiB | "
        "disk bytes/appended sample | failed requests | dropped |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['nodes']} | {r['series']:,.0f} | {r['sent_per_s']:,.0f} | {r['appended_per_s']:,.0f} | "
            f"{r['wire_bytes_per_sample']:.2f} | {r['receivers_cores']:.2f} | {r['query_rule_cores']:.2f} | "
            f"{r['fleet_cores']:.2f} | {r['receivers_rss']:,.0f} | {r['fleet_rss']:,.0f} | {r['disk'] / 2**20:,.0f} | "
            f"{r['disk_bytes_per_sample']:.2f} | {r['failed']:,.0f} | {r['dropped']:,.0f} |")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

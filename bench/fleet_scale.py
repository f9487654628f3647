#!/usr/bin/env python3
"""The cost curve of a simulated GPU fleet scraped by Prometheus 3 with the monitoring mixin loaded.

For each fleet size (gpuscope-fleet --fleet sim/fleets/mixed.yaml --nodes N, GPU collector every 15 s), a
fresh Prometheus 3 scrapes the fleet's file_sd targets every 15 s and evaluates the mixin's recording and
alerting rules (deploy/mixin/generated/prometheus, as a site loads them). After a warm-up the script
measures over a window: series and samples/s; Prometheus' RSS, CPU, head series, scrape duration (mean and
max of scrape_duration_seconds over every target and scrape of the window); each rule group's and each
recording rule's evaluation time (/api/v1/rules, read after every evaluation of the window: mean and max);
missed rule-group iterations; the fleet process's CPU and RSS, per node.

With --compare-rules REV, once the window is over the same Prometheus (same head, same fleet) reloads the
rule files of git revision REV and measures each rule again over a second window: the before/after table
of a change to the mixin's rules, at the same load.

Figures are reported, never asserted. Not part of the test run.

    bench/fleet_scale.py [--build build] [--nodes 10,100,1000] [--warmup 90] [--window 180]
                         [--compare-rules REV] [--out bench/results/fleet_scale.md] [--json FILE]

Writes the Markdown report (with --out) and the raw figures as JSON (with --json); prints progress on
stderr and the report on stdout. The same load pushed to the Thanos Receive ring of deploy/thanos/ is
bench/fleet_push.py's (bench/results/fleet_push.md).
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402

RULES_DIR = os.path.join(ROOT, "deploy", "mixin", "generated", "prometheus")
RULE_FILES = ("recording_rules.yaml", "alerting_rules.yaml")
INTERVAL_S = 15


def log(message):
    print(f"[{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def peer_prometheus3():
    """The pinned Prometheus 3 from the peers' cache (cmake/GpuscopePeers.cmake's GPUSCOPE_PROMETHEUS3_BIN)."""
    versions = {}
    with open(os.path.join(ROOT, "scripts", "versions.env")) as f:
        for line in f:
            if "=" in line and not line.lstrip().startswith("#"):
                key, value = line.strip().split("=", 1)
                versions[key] = value.strip('"')
    cache = os.environ.get("GPUSCOPE_PEERS_CACHE", os.path.expanduser("~/.cache/gpuscope/peers"))
    folder = os.path.join(cache, f"prometheus-{versions['PROMETHEUS3_VERSION']}")
    return os.path.join(folder, "prometheus"), os.path.join(folder, "promtool")


def rules_at(revision, into):
    """The generated rule files of git revision `revision` (e.g. main) written into the folder `into`."""
    os.makedirs(into, exist_ok=True)
    for name in RULE_FILES:
        text = subprocess.run(["git", "-C", ROOT, "show", f"{revision}:deploy/mixin/generated/prometheus/{name}"],
                              check=True, capture_output=True, text=True).stdout
        with open(os.path.join(into, name), "w") as f:
            f.write(text)
    return into


def proc_cpu_seconds(pid):
    """utime + stime of the process (all threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid, key):
    """A field of /proc/PID/status in KiB (VmRSS, VmHWM) or as a number (Threads)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def scalar(prometheus, promql):
    result = prometheus.query(promql)
    return float(result[0]["value"][1]) if result else float("nan")


def api_rules(prometheus):
    body = json.loads(harness.http_get(prometheus.url + "/api/v1/rules", timeout=30)[2])
    return body["data"]["groups"]


class RuleTimes:
    """Each group's and each rule's evaluationTime, sampled once per evaluation of its group (by its
    lastEvaluation timestamp)."""

    def __init__(self):
        self.groups = {}  # name -> {"interval": s, "samples": [s], "seen": set of lastEvaluation}
        self.rules = {}  # (group, name, index) -> {"type", "samples"}

    def sample(self, prometheus):
        for group in api_rules(prometheus):
            entry = self.groups.setdefault(group["name"], {"interval": group["interval"], "samples": [],
                                                           "seen": set()})
            stamp = group.get("lastEvaluation")
            if not stamp or stamp.startswith("0001-") or stamp in entry["seen"]:
                continue
            entry["seen"].add(stamp)
            entry["samples"].append(group["evaluationTime"])
            for index, rule in enumerate(group["rules"]):
                key = (group["name"], rule["name"], index)
                self.rules.setdefault(key, {"type": rule["type"], "samples": []})["samples"].append(
                    rule["evaluationTime"])

    def summary(self):
        def stats(samples):
            return {"mean_s": sum(samples) / len(samples) if samples else float("nan"),
                    "max_s": max(samples) if samples else float("nan"), "evaluations": len(samples)}
        return {
            "groups": {name: dict(stats(g["samples"]), interval_s=g["interval"]) for name, g in self.groups.items()},
            "rules": [dict(stats(r["samples"]), group=k[0], name=k[1], index=k[2], type=r["type"])
                      for k, r in sorted(self.rules.items(), key=lambda kv: (kv[0][0], kv[0][2]))],
        }


def measure_rules(prometheus, seconds):
    times = RuleTimes()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        times.sample(prometheus)
        time.sleep(2)
    times.sample(prometheus)
    return times.summary()


def start_prometheus(binary, file_sd, rules_dir, workdir):
    config = (f"global: {{scrape_interval: {INTERVAL_S}s, evaluation_interval: {INTERVAL_S}s, "
              f"scrape_timeout: 10s}}\n"
              "rule_files:\n" + "".join(f"  - {os.path.join(rules_dir, n)}\n" for n in RULE_FILES)
              + "scrape_configs:\n"
              "  - job_name: gpuscope\n"
              f"    file_sd_configs: [{{files: [{file_sd}], refresh_interval: 30s}}]\n"
              "  - job_name: prometheus\n"
              "    static_configs: [{targets: ['127.0.0.1:PORT']}]\n")
    port = harness.free_port()
    config = config.replace("PORT", str(port))
    return harness.Prometheus((), binary=binary, config=config, port=port,
                              extra_args=("--web.enable-lifecycle",))


def reload_rules(prometheus, rules_dir):
    """Points the running Prometheus' rule_files at rules_dir and reloads it."""
    path = os.path.join(prometheus.workdir, "prometheus.yml")
    with open(path) as f:
        text = f.read()
    head, rest = text.split("rule_files:\n", 1)
    rest = rest.split("scrape_configs:\n", 1)[1]
    with open(path, "w") as f:
        f.write(head + "rule_files:\n" + "".join(f"  - {os.path.join(rules_dir, n)}\n" for n in RULE_FILES)
                + "scrape_configs:\n" + rest)
    request = urllib.request.Request(prometheus.url + "/-/reload", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200, response.status


def run_point(args, nodes, prometheus_bin, compare_dir):
    """One fleet size: returns a dict of figures."""
    work = tempfile.mkdtemp(prefix=f"gpuscope-fleet-scale-{nodes}-")
    file_sd = os.path.join(work, "targets.json")
    fleet_log = open(os.path.join(work, "fleet.log"), "w")
    fleet_bin = os.path.join(args.build, "sim", "fleet", "gpuscope-fleet")
    started = time.monotonic()
    fleet = subprocess.Popen(
        [fleet_bin, "--fleet", os.path.join(ROOT, "sim", "fleets", "mixed.yaml"), "--nodes", str(nodes),
         "--file-sd", file_sd, "--state-dir", os.path.join(work, "state"), "--log.level", "warn",
         f"--collector.gpu.interval={INTERVAL_S}s"],
        stdout=fleet_log, stderr=subprocess.STDOUT)
    prometheus = None
    try:
        def fleet_ready():
            if fleet.poll() is not None:
                raise AssertionError(f"gpuscope-fleet exited with {fleet.returncode}")
            return os.path.exists(file_sd)

        harness.wait_for(fleet_ready, 900, "the fleet's file_sd file")
        fleet_ready_s = time.monotonic() - started
        log(f"{nodes} nodes: fleet ready in {fleet_ready_s:.0f} s; starting Prometheus 3")
        prometheus = start_prometheus(prometheus_bin, file_sd, args.rules_dir, work)
        harness.wait_for(lambda: scalar(prometheus, 'count(up{job="gpuscope"} == 1)') == nodes, 300,
                         f"{nodes} targets up")
        time.sleep(args.warmup)
        log(f"{nodes} nodes: measuring over {args.window} s")
        cpu0 = {"fleet": proc_cpu_seconds(fleet.pid), "prometheus": proc_cpu_seconds(prometheus.process.pid)}
        t0 = time.monotonic()
        rules = measure_rules(prometheus, args.window)
        elapsed = time.monotonic() - t0
        cpu = {k: (proc_cpu_seconds(p) - cpu0[k]) / elapsed
               for k, p in (("fleet", fleet.pid), ("prometheus", prometheus.process.pid))}
        window = f"{int(elapsed)}s"
        sel = 'job="gpuscope"'
        point = {
            "nodes": nodes,
            "gpus": scalar(prometheus, f'count(gpuscope_gpu_info{{{sel}}})'),
            "fleet_ready_s": fleet_ready_s,
            "targets_up": scalar(prometheus, f'count(up{{{sel}}} == 1)'),
            "samples_per_scrape": scalar(prometheus, f'sum(scrape_samples_scraped{{{sel}}})'),
            "head_series": scalar(prometheus, 'prometheus_tsdb_head_series{job="prometheus"}'),
            "samples_per_s": scalar(prometheus,
                                    f'rate(prometheus_tsdb_head_samples_appended_total{{job="prometheus"}}[{window}])'),
            "scrape_duration_mean_s": scalar(prometheus, f'avg(avg_over_time(scrape_duration_seconds{{{sel}}}[{window}]))'),
            "scrape_duration_max_s": scalar(prometheus, f'max(max_over_time(scrape_duration_seconds{{{sel}}}[{window}]))'),
            "rule_iterations_missed": scalar(prometheus, 'sum(prometheus_rule_group_iterations_missed_total{job="prometheus"})'),
            "rule_evaluation_failures": scalar(prometheus, 'sum(prometheus_rule_evaluation_failures_total{job="prometheus"})'),
            "prometheus_rss_mib": proc_status(prometheus.process.pid, "VmRSS") / 1024,
            "prometheus_hwm_mib": proc_status(prometheus.process.pid, "VmHWM") / 1024,
            "prometheus_cpu_cores": cpu["prometheus"],
            "fleet_rss_mib": proc_status(fleet.pid, "VmRSS") / 1024,
            "fleet_threads": proc_status(fleet.pid, "Threads"),
            "fleet_cpu_cores": cpu["fleet"],
            "window_s": elapsed,
            "rules": rules,
            "loadavg": os.getloadavg(),
        }
        log(f"{nodes} nodes: {point['head_series']:.0f} head series, {point['samples_per_s']:.0f} samples/s, "
            f"Prometheus {point['prometheus_rss_mib']:.0f} MiB, fleet {point['fleet_rss_mib']:.0f} MiB "
            f"{point['fleet_cpu_cores'] * 100:.1f} % of a core")
        if compare_dir:
            reload_rules(prometheus, compare_dir)
            time.sleep(2 * INTERVAL_S)
            log(f"{nodes} nodes: the rules of {args.compare_rules}, over {args.window} s")
            point["compare_rules"] = {"revision": args.compare_rules,
                                      "rules": measure_rules(prometheus, args.window)}
        return point
    finally:
        if prometheus is not None:
            prometheus.stop()
        harness.terminate(fleet, timeout=120)
        fleet_log.close()
        if fleet.returncode != 0:
            with open(os.path.join(work, "fleet.log")) as f:
                log(f"fleet exited with {fleet.returncode}: {f.read()[-2000:]}")
        shutil.rmtree(work, ignore_errors=True)


def fmt(x, digits=0):
    if x is None or x != x:
        return "n/a"
    return f"{x:,.{digits}f}"


def render(points, args, started_at):
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "deploy/mixin"],
                           capture_output=True, text=True).stdout.strip()
    out = [
        "# The fleet at scale on Prometheus 3: the cost curve",
        "",
        f"`bench/fleet_scale.py --nodes {args.nodes} --warmup {args.warmup} --window {args.window}"
        + (f" --compare-rules {args.compare_rules}" if args.compare_rules else "") + "`, "
        f"{started_at:%Y-%m-%d %H:%M} UTC, commit {commit}{' (mixin modified)' if dirty else ''}, "
        f"{os.cpu_count()} CPUs shared with other work (load average at each point below).",
        "",
        "Each point: `gpuscope-fleet --fleet sim/fleets/mixed.yaml --nodes N --collector.gpu.interval=15s`, "
        "a fresh Prometheus 3 scraping its file_sd targets every 15 s and evaluating the mixin's generated "
        "recording and alerting rules every 15 s (recording groups at their own 30 s interval), measured "
        f"after a {args.warmup} s warm-up over a {args.window} s window.",
        "",
        "| nodes | GPUs | series/scrape | head series | samples/s | Prom RSS MiB | Prom CPU cores | "
        "scrape mean ms | scrape max ms | rules: slowest group ms (mean/max) | missed iterations | "
        "fleet CPU cores | fleet RSS MiB | fleet CPU %/node | fleet RSS MiB/node | fleet ready s | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        groups = p["rules"]["groups"]
        slowest = max(groups.items(), key=lambda kv: kv[1]["mean_s"]) if groups else ("", {"mean_s": float("nan"),
                                                                                            "max_s": float("nan")})
        out.append(
            f"| {p['nodes']:,} | {fmt(p['gpus'])} | {fmt(p['samples_per_scrape'])} | {fmt(p['head_series'])} | "
            f"{fmt(p['samples_per_s'])} | {fmt(p['prometheus_rss_mib'])} | {fmt(p['prometheus_cpu_cores'], 2)} | "
            f"{fmt(p['scrape_duration_mean_s'] * 1000, 1)} | {fmt(p['scrape_duration_max_s'] * 1000, 1)} | "
            f"{slowest[0]} {fmt(slowest[1]['mean_s'] * 1000, 1)}/{fmt(slowest[1]['max_s'] * 1000, 1)} | "
            f"{fmt(p['rule_iterations_missed'])} | {fmt(p['fleet_cpu_cores'], 3)} | {fmt(p['fleet_rss_mib'])} | "
            f"{fmt(p['fleet_cpu_cores'] * 100 / p['nodes'], 4)} | {fmt(p['fleet_rss_mib'] / p['nodes'], 2)} | "
            f"{fmt(p['fleet_ready_s'])} | {' '.join(f'{x:.1f}' for x in p['loadavg'])} |")
    out += ["", "## Rule groups (evaluation time, ms: mean / max over the window)", ""]
    names = sorted({g for p in points for g in p["rules"]["groups"]})
    out.append("| group | " + " | ".join(f"{p['nodes']:,} nodes" for p in points) + " |")
    out.append("|---|" + "---|" * len(points))
    for name in names:
        cells = []
        for p in points:
            g = p["rules"]["groups"].get(name)
            cells.append(f"{fmt(g['mean_s'] * 1000, 2)} / {fmt(g['max_s'] * 1000, 2)}" if g else "")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    # Per rule at the largest point only: at the small ones every rule takes milliseconds, within the noise.
    compared = [p for p in points if p.get("compare_rules")][-1:]
    for p in compared:
        out += ["", f"## Each rule at {p['nodes']:,} nodes: this tree's rules and "
                f"{p['compare_rules']['revision']}'s, same Prometheus, same fleet (ms, mean / max)", "",
                "Recording rules, then the alerts that take over 1 ms either way.", "",
                f"| group | rule | this tree | {p['compare_rules']['revision']} |", "|---|---|---|---|"]
        other = {(r["group"], r["name"]): r for r in p["compare_rules"]["rules"]["rules"]}
        mine = {(r["group"], r["name"]): r for r in p["rules"]["rules"]}
        keys = sorted(set(mine) | set(other), key=lambda k: -max(mine.get(k, {}).get("mean_s", 0),
                                                                 other.get(k, {}).get("mean_s", 0)))
        alerting = [k for k in keys if (mine.get(k) or other.get(k))["type"] != "recording"]
        slow = [k for k in alerting if max(mine.get(k, {}).get("mean_s", 0), other.get(k, {}).get("mean_s", 0)) > 1e-3]
        for key in [k for k in keys if k not in alerting] + slow:
            a, b = mine.get(key), other.get(key)
            out.append(f"| {key[0]} | `{key[1]}` | "
                       + (f"{fmt(a['mean_s'] * 1000, 1)} / {fmt(a['max_s'] * 1000, 1)}" if a else "-") + " | "
                       + (f"{fmt(b['mean_s'] * 1000, 1)} / {fmt(b['max_s'] * 1000, 1)}" if b else "-") + " |")
    out += ["", "## The same load pushed to the Thanos Receive ring", "",
            "Measured by bench/fleet_push.py: bench/results/fleet_push.md."]
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--nodes", default="10,100,1000")
    parser.add_argument("--warmup", type=int, default=90)
    parser.add_argument("--window", type=int, default=180)
    parser.add_argument("--rules-dir", default=RULES_DIR)
    parser.add_argument("--compare-rules", help="git revision whose generated rules are measured after")
    parser.add_argument("--prometheus", help="Prometheus 3 binary (default: the pinned peer)")
    parser.add_argument("--out", help="Markdown report")
    parser.add_argument("--json", help="raw figures")
    parser.add_argument("--from-json", help="render the report of an earlier run's raw figures, run nothing")
    args = parser.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            points = json.load(f)
        report = render(points, args, datetime.datetime.fromtimestamp(os.path.getmtime(args.from_json),
                                                                      datetime.timezone.utc))
        print(report)
        if args.out:
            with open(args.out, "w") as f:
                f.write(report)
        return
    args.build = os.path.abspath(args.build)
    prometheus_bin = args.prometheus or peer_prometheus3()[0]
    if not os.access(prometheus_bin, os.X_OK):
        sys.exit(f"fleet_scale: no Prometheus 3 at {prometheus_bin} (scripts/build-peers.sh prometheus3)")
    started_at = datetime.datetime.now(datetime.timezone.utc)
    compare_dir = rules_at(args.compare_rules, tempfile.mkdtemp(prefix="gpuscope-rules-")) if args.compare_rules else None
    points = []
    for nodes in (int(n) for n in args.nodes.split(",")):
        points.append(run_point(args, nodes, prometheus_bin, compare_dir))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(points, f, indent=1)
    report = render(points, args, started_at)
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()

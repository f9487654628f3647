"""A Thanos Receive ring on loopback, started from the reference configuration in deploy/thanos/ (its systemd
units' command lines and its hashring.json, with hosts, ports and paths substituted): three `thanos receive`
in one hashring with replication factor 2, each with its own TSDB directory, remote-write, HTTP and gRPC
ports; `thanos query` over their gRPC endpoints and the ruler's, deduplicating the replica labels; `thanos
rule` evaluating the mixin's generated rules on that query endpoint and sending alerts to an Alertmanager.
A receiver can be SIGKILLed and started again on the same ports and TSDB directory. Standard library only.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import urllib.parse

import harness

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy", "thanos")
MIXIN_RULES = os.path.join(ROOT, "deploy", "mixin", "generated", "prometheus")
RECEIVERS = 3  # hashring.json's members


def unit_command(unit_path, substitutions):
    """The command line of a systemd unit's ExecStart (continuation lines joined, words split as systemd
    and the shell both split them), with each (old, new) of `substitutions` replaced in every word, in
    order. A substitution that matches nothing is an error: the reference file and the harness must not
    drift apart unnoticed."""
    with open(unit_path) as f:
        text = f.read()
    match = re.search(r"^ExecStart=((?:.*\\\n)*.*)$", text, re.MULTILINE)
    if not match:
        raise AssertionError(f"{unit_path} has no ExecStart")
    words = shlex.split(match.group(1).replace("\\\n", " "))
    for old, new in substitutions:
        if not any(old in w for w in words):
            raise AssertionError(f"{unit_path}: nothing to substitute for {old!r} in {words}")
        words = [w.replace(old, new) for w in words]
    return words


class _Process:
    """One Thanos component: its command, its log (one file per start) and its HTTP readiness."""

    def __init__(self, name, command, http_port, workdir):
        self.name = name
        self.command = command
        self.http_url = f"http://127.0.0.1:{http_port}"
        self.workdir = workdir
        self.process = None
        self._log = None
        self.starts = 0

    def start(self, wait=True):
        self._log = open(os.path.join(self.workdir, f"{self.name}-{self.starts}.log"), "w")
        self.starts += 1
        self.process = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()

    def wait_ready(self):
        harness.wait_for(self._ready, 90, f"{self.name} to be ready")

    def _ready(self):
        if self.process.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.process.returncode}: {self.read_log()[-3000:]}")
        try:
            return harness.http_get(self.http_url + "/-/ready")[0] == 200
        except OSError:
            return False

    def kill9(self):
        self.process.kill()
        self.process.wait()
        self._log.close()

    def stop(self):
        if self.process is not None:
            harness.terminate(self.process)
        if self._log is not None and not self._log.closed:
            self._log.close()

    def read_log(self):
        out = []
        for n in range(self.starts):
            with open(os.path.join(self.workdir, f"{self.name}-{n}.log")) as f:
                out.append(f"--- {self.name} start {n} ---\n" + f.read())
        return "".join(out)


class ThanosRing:
    """deploy/thanos/ on loopback. receivers[i].remote_write_url is where a pusher sends to receiver i (any
    receiver routes every series to its two places in the ring). rule_files: the mixin's generated rules by
    default (the directory the reference unit's /etc/thanos/rules/ stands for)."""

    def __init__(self, binary, alertmanager_url, rules_dir=MIXIN_RULES):
        self.binary = binary
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-thanos-")
        ports = {name: harness.free_port() for name in
                 [f"receive-{i}-{kind}" for i in range(RECEIVERS) for kind in ("rw", "grpc", "http")] +
                 ["query-http", "query-grpc", "rule-http", "rule-grpc"]}
        self.ports = ports
        grpc_of = {f"thanos-receive-{i}.example:10901": f"127.0.0.1:{ports[f'receive-{i}-grpc']}"
                   for i in range(RECEIVERS)}

        # The hashring, its members renamed to their loopback gRPC addresses.
        with open(os.path.join(DEPLOY, "hashring.json")) as f:
            hashring = json.load(f)
        members = [e for ring in hashring for e in ring["endpoints"]]
        if sorted(members) != sorted(grpc_of):
            raise AssertionError(f"hashring.json names {members}, the harness knows {sorted(grpc_of)}")
        for ring in hashring:
            ring["endpoints"] = [grpc_of[e] for e in ring["endpoints"]]
        self.hashring_path = os.path.join(self.workdir, "hashring.json")
        with open(self.hashring_path, "w") as f:
            json.dump(hashring, f)

        self.receivers = []
        for i in range(RECEIVERS):
            tsdb = os.path.join(self.workdir, f"receive-{i}")
            command = unit_command(os.path.join(DEPLOY, "thanos-receive.service"), [
                ("/usr/local/bin/thanos", binary),
                ("/var/lib/thanos/receive", tsdb),
                ("0.0.0.0:19291", f"127.0.0.1:{ports[f'receive-{i}-rw']}"),
                ("0.0.0.0:10901", f"127.0.0.1:{ports[f'receive-{i}-grpc']}"),
                ("0.0.0.0:10902", f"127.0.0.1:{ports[f'receive-{i}-http']}"),
                ("/etc/thanos/hashring.json", self.hashring_path),
                ("%H:10901", grpc_of[f"thanos-receive-{i}.example:10901"]),
                ("%H", f"thanos-receive-{i}"),
            ])
            receiver = _Process(f"receive-{i}", command, ports[f"receive-{i}-http"], self.workdir)
            receiver.tsdb = tsdb
            receiver.remote_write_url = f"http://127.0.0.1:{ports[f'receive-{i}-rw']}/api/v1/receive"
            self.receivers.append(receiver)

        query_command = unit_command(os.path.join(DEPLOY, "thanos-query.service"), [
            ("/usr/local/bin/thanos", binary),
            ("0.0.0.0:10904", f"127.0.0.1:{ports['query-http']}"),
            ("0.0.0.0:10903", f"127.0.0.1:{ports['query-grpc']}"),
            *grpc_of.items(),
            ("thanos-rule.example:10907", f"127.0.0.1:{ports['rule-grpc']}"),
        ])
        self.query_process = _Process("query", query_command, ports["query-http"], self.workdir)
        self.url = self.query_process.http_url

        rule_command = unit_command(os.path.join(DEPLOY, "thanos-rule.service"), [
            ("/usr/local/bin/thanos", binary),
            ("/var/lib/thanos/rule", os.path.join(self.workdir, "rule")),
            ("/etc/thanos/rules", rules_dir),
            ("http://thanos-query.example:10904", self.url),
            ("http://alertmanager.example:9093", alertmanager_url),
            ("0.0.0.0:10908", f"127.0.0.1:{ports['rule-http']}"),
            ("0.0.0.0:10907", f"127.0.0.1:{ports['rule-grpc']}"),
            ("%H", "thanos-rule"),
        ])
        self.rule = _Process("rule", rule_command, ports["rule-http"], self.workdir)
        self.processes = [*self.receivers, self.query_process, self.rule]
        try:
            for receiver in self.receivers:  # all at once: each is ready once it has read the hashring
                receiver.start(wait=False)
            for receiver in self.receivers:
                receiver.wait_ready()
            self.query_process.start()
            self.rule.start()
        except BaseException:
            self.stop()
            raise

    def kill_receiver(self, i):
        """SIGKILL of receiver i: no shutdown, no flush; what it acknowledged is only in its WAL."""
        self.receivers[i].kill9()

    def start_receiver(self, i):
        """Receiver i again, on the same ports and TSDB directory; returns once it is ready."""
        self.receivers[i].start()

    def query(self, promql, at=None, dedup=True):
        """An instant query through thanos query, deduplicated across replicas unless dedup=False (then each
        replica's copy of a series is its own result, with its receive_replica label)."""
        params = {"query": promql, "dedup": str(dedup).lower()}
        if at is not None:
            params["time"] = f"{at:.3f}"
        body = json.loads(harness.http_get(self.url + "/api/v1/query?" + urllib.parse.urlencode(params),
                                           timeout=30)[2])
        if body.get("status") != "success":
            raise AssertionError(f"query {promql!r} failed: {body}")
        return body["data"]["result"]

    def raw_samples(self, selector, start, end):
        """The samples stored for each series `selector` matches with a timestamp in (start, end] (Unix
        seconds): {frozenset(labels without the replica label): [(timestamp ms, value), ...]}, oldest first.
        Read per replica (no deduplication, which may skip samples where it switches replicas) and united:
        a sample counts as stored when any replica holds it."""
        window = max(1, int(round(end - start)))
        out = {}
        for series in self.query(f"{selector}[{window}s]", at=end, dedup=False):
            labels = frozenset((k, v) for k, v in series["metric"].items() if k != "receive_replica")
            merged = dict(out.get(labels, []))
            merged.update((round(float(t) * 1000), float(v)) for t, v in series["values"])
            out[labels] = sorted(merged.items())
        return out

    def logs(self):
        return "".join(p.read_log() for p in self.processes if p.starts)

    def stop(self):
        for p in self.processes:
            p.stop()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

"""Shared helpers for gpuscope's integration tests: start the agent on the simulator and real Prometheus
on loopback, scrape, query PromQL. Standard library only."""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request


def failed(test):
    """In a unittest.TestCase's tearDown: whether the test that just ran failed or raised (to print the
    logs of the processes it started only then)."""
    result = getattr(test._outcome, "result", None)
    return result is not None and any(t is test for t, _ in result.errors + result.failures)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as exc:  # noqa: BLE001 - keep polling until the deadline
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def terminate(process, timeout=15):
    """Stops a test's server process: SIGTERM, then SIGKILL when it has not exited within `timeout` s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def http_get(url, headers=None, timeout=5, context=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        return response.status, dict(response.headers), response.read()


class Agent:
    """gpuscope-agent on 127.0.0.1:0 with the simulator; learns its port from the start-up log line."""

    def __init__(self, binary, sim_library, scenario, extra_args=(), env=None):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-agent-")
        self.log_path = os.path.join(self.workdir, "agent.log")
        environment = dict(os.environ)
        environment["GPUSCOPE_SIM_SCENARIO"] = scenario
        environment.update(env or {})
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [binary, "--nvml.library", sim_library, "--web.listen-address", "127.0.0.1:0",
             "--gpu.hostname", "sim-node", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT, env=environment)
        self.port = wait_for(self._port_from_log, 30, "the agent's listening line")
        self.url = f"http://127.0.0.1:{self.port}"

    def _port_from_log(self):
        if self.process.poll() is not None:
            raise AssertionError(f"agent exited with {self.process.returncode}: {self.read_log()}")
        match = re.search(r"gpuscope-agent listening.* port=(\d+)", self.read_log())
        return int(match.group(1)) if match else None

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def metrics(self):
        return http_get(self.url + "/metrics")[2].decode()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        return self.process.returncode

    def cleanup(self):
        shutil.rmtree(self.workdir, ignore_errors=True)

    def finish(self, show_log=False):
        """stop() and cleanup(); with show_log (a failed test's tearDown) the log's tail goes to stderr first."""
        if show_log:
            print(f"--- agent log ---\n{self.read_log()[-4000:]}", file=sys.stderr)
        self.stop()
        self.cleanup()


class Prometheus:
    """A real Prometheus scraping the given targets every second: `binary`, else $GPUSCOPE_PROMETHEUS (the
    tests that run again on Prometheus 3 set it), else Debian's on PATH. extra_config: top-level YAML
    appended after scrape_configs (e.g. an alerting section). config: a whole configuration file's text
    instead (targets, rule_files, scrape_extra, job_name and extra_config are then unused). Behind a
    --web.config.file (in extra_args) the test's own API calls need `headers` (basic auth) and, for TLS,
    an ssl `context` (which makes the URL https). openmetrics: history to start with, as OpenMetrics text
    with timestamps, backfilled by `promtool` (tsdb create-blocks-from openmetrics) into the TSDB before
    the server starts (kept for ten years, so old synthetic history is not dropped at once)."""

    def __init__(self, targets, binary=None, rule_files=(), scrape_extra="", job_name="gpu", extra_config="",
                 port=None, config=None, extra_args=(), headers=None, context=None, openmetrics=None,
                 promtool=None):
        self.binary = (binary or os.environ.get("GPUSCOPE_PROMETHEUS") or shutil.which("prometheus")
                       or "/usr/bin/prometheus")
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-prometheus-")
        self.port = port or free_port()
        if config is None:
            target_list = ", ".join(f'"{t}"' for t in targets)
            rules = "".join(f"\n  - {r}" for r in rule_files)
            config = ("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                      f"rule_files:{rules if rules else ' []'}\n"
                      "scrape_configs:\n"
                      f"  - job_name: {job_name}\n"
                      f"    static_configs: [{{targets: [{target_list}]}}]\n"
                      + scrape_extra + extra_config)
        config_path = os.path.join(self.workdir, "prometheus.yml")
        with open(config_path, "w") as f:
            f.write(config)
        self.data = os.path.join(self.workdir, "data")
        self.promtool = promtool or shutil.which("promtool") or "/usr/bin/promtool"
        extra_args = list(extra_args)
        if openmetrics is not None:
            source = os.path.join(self.workdir, "history.om")
            with open(source, "w") as f:
                f.write(openmetrics)
            subprocess.run([self.promtool, "tsdb", "create-blocks-from", "openmetrics", source, self.data],
                           check=True, capture_output=True, text=True, timeout=300)
            extra_args.append("--storage.tsdb.retention.time=10y")
        self.args = [self.binary, f"--config.file={config_path}", f"--storage.tsdb.path={self.data}",
                     f"--web.listen-address=127.0.0.1:{self.port}", *extra_args]
        self.log = open(os.path.join(self.workdir, "prometheus.log"), "w")
        self.headers = headers or {}
        self.context = context
        self.url = f"{'https' if context else 'http'}://127.0.0.1:{self.port}"
        self._start()

    def _start(self):
        self.process = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._ready, 60, "Prometheus to be ready")

    def _halt(self):
        terminate(self.process)

    def backfill_rules(self, rule_file, start, end):
        """Evaluates `rule_file`'s recording rules over [start, end] (Unix seconds) with promtool (tsdb
        create-blocks-from rules) against this server, then restarts it on the blocks that hold the results:
        promtool writes them beside the live TSDB, and a running server would load them only at its next
        reload."""
        out = os.path.join(self.workdir, "rules-out")
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([self.promtool, "tsdb", "create-blocks-from", "rules", f"--url={self.url}",
                        f"--start={start}", f"--end={end}", f"--output-dir={out}", rule_file], check=True,
                       capture_output=True, text=True, timeout=120)
        self._halt()
        for block in os.listdir(out):
            shutil.move(os.path.join(out, block), os.path.join(self.data, block))
        self._start()

    def _ready(self):
        if self.process.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.process.returncode}")
        return http_get(self.url + "/-/ready", self.headers, context=self.context)[0] == 200

    def query(self, promql, at=None):
        """Instant query, at `at` (Unix seconds) when given, else now."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode(params)
        body = json.loads(http_get(url, self.headers, context=self.context)[2])
        if body.get("status") != "success":
            raise AssertionError(f"query {promql!r} failed: {body}")
        return body["data"]["result"]

    def stop(self):
        self._halt()
        self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


class VictoriaMetrics:
    """A real single-node VictoriaMetrics (Debian package) on loopback, taking remote_write 1.0 at
    /api/v1/write; its Prometheus-compatible query API answers at once (no latency offset). extra_args
    (e.g. -httpAuth.username) go on its command line; `headers` on the test's own API calls."""

    def __init__(self, binary=None, port=None, extra_args=(), headers=None):
        self.binary = binary or shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-vm-")
        self.port = port or free_port()
        self.log = open(os.path.join(self.workdir, "vm.log"), "w")
        self.process = subprocess.Popen(
            [self.binary, f"-storageDataPath={self.workdir}/data", f"-httpListenAddr=127.0.0.1:{self.port}",
             "-retentionPeriod=100y", "-search.latencyOffset=0s", "-search.disableCache", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.headers = headers or {}
        self.context = None
        self.url = f"http://127.0.0.1:{self.port}"
        wait_for(self._ready, 30, "VictoriaMetrics to be ready")

    def _ready(self):
        if self.process.poll() is not None:
            raise AssertionError(f"victoria-metrics exited with {self.process.returncode}")
        try:
            return http_get(self.url + "/health", self.headers)[0] == 200
        except OSError:
            return False

    query = Prometheus.query

    def export(self, selector, start=0, end=None):
        """Every raw sample stored for the series `selector` matches, duplicates included (no
        deduplication is configured): [(labels dict, [(timestamp ms, value), ...])], from /api/v1/export."""
        http_get(self.url + "/internal/force_flush")
        params = {"match[]": selector, "start": str(start)}
        if end is not None:
            params["end"] = str(end)
        request = urllib.request.Request(self.url + "/api/v1/export", data=urllib.parse.urlencode(params).encode())
        with urllib.request.urlopen(request, timeout=120) as response:
            lines = response.read().decode().splitlines()
        out = []
        for line in lines:
            if line.strip():
                series = json.loads(line)
                out.append((series["metric"], list(zip(series["timestamps"], series["values"]))))
        return out

    _halt = Prometheus._halt
    stop = Prometheus.stop  # terminates it and removes its data


class FaultReceiver:
    """gpuscope-push-receiver (tests/tools/push_receiver, our own receiver for the faults a real one cannot
    produce) on 127.0.0.1. Each start records into a new file; a restart keeps the port."""

    def __init__(self, binary, workdir, mode="ok", port=0, start=True):
        self.binary = binary
        self.workdir = workdir
        self.port = port
        self.outputs = []
        self.process = None
        self._stdout = None
        if start:
            self.start(mode)

    def start(self, mode="ok"):
        n = len(self.outputs)
        output = os.path.join(self.workdir, f"received-{n}.jsonl")
        stdout_path = os.path.join(self.workdir, f"receiver-{n}.out")
        self.outputs.append(output)
        self._stdout = open(stdout_path, "w")
        self.process = subprocess.Popen([self.binary, "--output", output, "--port", str(self.port), "--mode", mode],
                                        stdout=self._stdout, stderr=subprocess.STDOUT)

        def listening():
            if self.process.poll() is not None:
                raise AssertionError(f"receiver exited with {self.process.returncode}")
            with open(stdout_path) as f:
                match = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
            return int(match.group(1)) if match else None

        self.port = wait_for(listening, 30, "the receiver's listening line")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def set_mode(self, mode):
        request = urllib.request.Request(self.url(f"/control?mode={mode}"), data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200

    def stats(self):
        return json.loads(http_get(self.url("/stats"))[2])

    def kill9(self):
        self.process.kill()
        self.process.wait()
        self._stdout.close()

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=15)
        if self._stdout is not None:
            self._stdout.close()

    def entries(self, sink=None):
        """Every recorded entry, in arrival order. A line without its newline (a run killed mid-write, or one
        being written now) is skipped: it was never acknowledged. Every other line must be strict UTF-8."""
        out = []
        for path in self.outputs:
            if not os.path.exists(path):
                continue
            with open(path, "rb") as f:
                lines = f.read().split(b"\n")
            for raw in lines[:-1]:
                entry = json.loads(raw.decode("utf-8", errors="strict"))
                if "error" in entry:
                    raise AssertionError(f"the receiver could not decode a push: {entry}")
                if sink is None or entry.get("sink") == sink:
                    out.append(entry)
        return out


def make_certificates(directory):
    """A CA, a server certificate for 127.0.0.1 and a client certificate (extendedKeyUsage clientAuth), both
    signed by the CA, made with openssl in `directory`. Returns {name: path} for ca, server_cert,
    server_key, client_cert, client_key."""
    def run(*command):
        subprocess.run(command, check=True, capture_output=True)
    p = {name: os.path.join(directory, name) for name in
         ("ca.pem", "ca.key", "server.pem", "server.key", "client.pem", "client.key")}
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=gpuscope test CA",
        "-keyout", p["ca.key"], "-out", p["ca.pem"])
    for who, extensions in (("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
                            ("client", "extendedKeyUsage=clientAuth\n")):
        csr, ext = os.path.join(directory, who + ".csr"), os.path.join(directory, who + ".ext")
        with open(ext, "w") as f:
            f.write(extensions)
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=gpuscope {who}",
            "-keyout", p[who + ".key"], "-out", csr)
        run("openssl", "x509", "-req", "-in", csr, "-CA", p["ca.pem"], "-CAkey", p["ca.key"], "-CAcreateserial",
            "-days", "1", "-extfile", ext, "-out", p[who + ".pem"])
    return {"ca": p["ca.pem"], "server_cert": p["server.pem"], "server_key": p["server.key"],
            "client_cert": p["client.pem"], "client_key": p["client.key"]}


def parse_exposition(text):
    """{(name, frozenset(labels.items())): value} from text format 0.0.4 (enough for our own output)."""
    samples = {}
    pattern = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
    label_pattern = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = pattern.match(line)
        if not match:
            raise AssertionError(f"unparsable exposition line: {line!r}")
        labels = dict(label_pattern.findall(match.group(3) or ""))
        samples[(match.group(1), frozenset(labels.items()))] = float(match.group(4))
    return samples


def unescape_label_value(value):
    """A label value with the exposition's escapes (of backslash, double quote and newline) undone."""
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def exposition_families(text):
    """{family: {frozenset(labels, values unescaped): value}} from text format 0.0.4."""
    out = {}
    for (name, labels), value in parse_exposition(text).items():
        out.setdefault(name, {})[frozenset((k, unescape_label_value(v)) for k, v in labels)] = value
    return out


def append(path, data):
    """One write(2) with O_APPEND: the tailer never sees half of it as a line."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data.encode() if isinstance(data, str) else data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def metric(agent, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`; None when there is none."""
    total = None
    for (sample_name, sample_labels), value in parse_exposition(agent.metrics()).items():
        have = dict(sample_labels)
        if sample_name == name and all(have.get(k) == v for k, v in labels.items()):
            total = (total or 0) + value
    return total

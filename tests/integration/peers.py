"""The real open-source receivers of the integration tests, on loopback: VictoriaLogs (Loki push in,
LogsQL out) and the OpenTelemetry Collector (OTLP in, the file exporter's JSON lines out); and the
kubelet's pod-resources API and the few Kubernetes API server endpoints the agent reads, each served from a
scenario by our server on the upstream Go packages. Built from
pinned Go modules by scripts/build-peers.sh; CMake passes their paths. Standard library only."""

import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import harness


def _stop(peer):
    """A peer's stop(): terminates its process (start() brings it back on the same port and data)."""
    if peer.process is not None and peer.process.poll() is None:
        peer.process.terminate()
        peer.process.wait(timeout=30)
    if peer._log is not None:
        peer._log.close()
        peer._log = None


def _cleanup(peer):
    """A peer's cleanup(): stops it and removes its directory."""
    _stop(peer)
    shutil.rmtree(peer.workdir, ignore_errors=True)


class VictoriaLogs:
    """victoria-logs on 127.0.0.1 with its data in a directory of its own. stop() and start() keep the
    port and the data directory, so a restart is the same receiver after an outage."""

    def __init__(self, binary, start=True):
        self.binary = binary
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-victorialogs-")
        self.port = harness.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None
        self._log = None
        self.starts = 0
        if start:
            self.start()

    def start(self):
        self._log = open(os.path.join(self.workdir, f"victoria-logs-{self.starts}.log"), "w")
        self.starts += 1
        self.process = subprocess.Popen(
            [self.binary, f"-storageDataPath={self.workdir}/data", f"-httpListenAddr=127.0.0.1:{self.port}",
             # Recorded fixtures keep their own times (Falco's of 2024): a retention that stores them.
             "-retentionPeriod=100y", "-loggerLevel=WARN"],
            stdout=self._log, stderr=subprocess.STDOUT)
        harness.wait_for(self._ready, 60, "VictoriaLogs to be ready")

    def _ready(self):
        if self.process.poll() is not None:
            raise AssertionError(f"victoria-logs exited with {self.process.returncode}: {self.read_log()}")
        return harness.http_get(self.url + "/insert/loki/ready")[0] == 200

    def read_log(self):
        out = []
        for name in sorted(os.listdir(self.workdir)):
            if name.endswith(".log"):
                with open(os.path.join(self.workdir, name)) as f:
                    out.append(f.read())
        return "".join(out)

    def loki_push_url(self):
        return self.url + "/insert/loki/api/v1/push"

    def query(self, logsql):
        """Every entry LogsQL `logsql` selects, as dicts of fields (_msg, _time, _stream, the stream labels
        and the structured metadata), after making what was ingested so far searchable."""
        harness.http_get(self.url + "/internal/force_flush")
        data = urllib.parse.urlencode({"query": logsql}).encode()
        with urllib.request.urlopen(urllib.request.Request(self.url + "/select/logsql/query", data=data),
                                    timeout=30) as response:
            body = response.read().decode("utf-8", errors="strict")
        return [json.loads(line) for line in body.splitlines() if line.strip()]

    stop = _stop
    cleanup = _cleanup


class OtelCollector:
    """The OpenTelemetry Collector (tests/tools/otelcol/main.go: OTLP receiver, file exporter) with OTLP/HTTP
    on 127.0.0.1 and every log, metric and trace request it decoded written as one JSON line (OTLP/JSON).
    stop() and start() keep the port and the output file. tls: {cert_file, key_file, client_ca_file} serves https
    (requiring a client certificate signed by client_ca_file); `context` is then the test's own ssl context
    for reaching it. bearer_token: the OTLP receiver takes only requests with "Authorization: Bearer <it>"
    (contrib's bearertokenauth extension); others are answered 401."""

    def __init__(self, binary, start=True, tls=None, context=None, bearer_token=None):
        self.binary = binary
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-otelcol-")
        self.port = harness.free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.context = context
        self.output = os.path.join(self.workdir, "received.jsonl")
        self.config = os.path.join(self.workdir, "config.yaml")
        pipeline = "{receivers: [otlp], exporters: [file]}"
        http_extra, extensions, service_extensions = "", "", ""
        if tls:
            http_extra += ", tls: {" + ", ".join(f"{k}: '{v}'" for k, v in tls.items()) + "}"
        if bearer_token:
            http_extra += ", auth: {authenticator: bearertokenauth}"
            extensions = f"extensions:\n  bearertokenauth: {{token: '{bearer_token}'}}\n"
            service_extensions = "  extensions: [bearertokenauth]\n"
        with open(self.config, "w") as f:
            f.write(extensions + "receivers:\n"
                    f"  otlp: {{protocols: {{http: {{endpoint: '127.0.0.1:{self.port}'{http_extra}}}}}}}\n"
                    "exporters:\n"
                    f"  file: {{path: '{self.output}', append: true, flush_interval: 100ms}}\n"
                    "service:\n" + service_extensions +
                    "  telemetry: {metrics: {level: none}, logs: {level: warn}}\n"
                    f"  pipelines: {{logs: {pipeline}, metrics: {pipeline}, traces: {pipeline}}}\n")
        self.process = None
        self._log = None
        if start:
            self.start()

    def start(self):
        """Starts the Collector on the same port; the file exporter appends to the same file."""
        self._log = open(os.path.join(self.workdir, "otelcol.log"), "a")
        self.process = subprocess.Popen([self.binary, f"--config=file:{self.config}"], stdout=self._log,
                                        stderr=subprocess.STDOUT)
        harness.wait_for(self._ready, 60, "the OpenTelemetry Collector to listen")

    def _ready(self):
        if self.process.poll() is not None:
            raise AssertionError(f"otelcol exited with {self.process.returncode}: {self.read_log()}")
        try:
            harness.http_get(self.url + "/v1/logs", context=self.context)
        except urllib.error.HTTPError:
            pass  # listening: a GET of the OTLP path is refused (405)
        return True

    def read_log(self):
        with open(os.path.join(self.workdir, "otelcol.log")) as f:
            return f.read()

    def requests(self):
        """Every request the file exporter wrote, decoded; a last line being written is left for later."""
        if not os.path.exists(self.output):
            return []
        with open(self.output, "rb") as f:
            lines = f.read().split(b"\n")
        return [json.loads(line.decode("utf-8", errors="strict")) for line in lines[:-1] if line.strip()]

    def log_records(self):
        """(resource attributes, scope, log record) for every log record received, in arrival order;
        attributes as {key: value} of their string values."""
        out = []
        for request in self.requests():
            for resource_logs in request.get("resourceLogs", []):
                resource = attributes(resource_logs.get("resource", {}).get("attributes", []))
                for scope_logs in resource_logs.get("scopeLogs", []):
                    for record in scope_logs.get("logRecords", []):
                        out.append((resource, scope_logs.get("scope", {}), record))
        return out

    def spans(self):
        """(resource attributes, scope, span) for every span received, in arrival order (OTLP/JSON: ids in
        hex, times as decimal strings, integer attributes as decimal strings)."""
        out = []
        for request in self.requests():
            for resource_spans in request.get("resourceSpans", []):
                resource = attributes(resource_spans.get("resource", {}).get("attributes", []))
                for scope_spans in resource_spans.get("scopeSpans", []):
                    for span in scope_spans.get("spans", []):
                        out.append((resource, scope_spans.get("scope", {}), span))
        return out

    stop = _stop
    cleanup = _cleanup


class ScenarioRefused(AssertionError):
    """A scenario server (pod-resources, kubeapi) refused a scenario file (the message is its log line's
    reason)."""


def _write_scenario(peer, scenario):
    """Writes a scenario peer's file (peer.scenario_path) atomically, never half-written: `scenario` a dict
    (written as JSON) or a str (as it is). Returns the bytes' sha256, which the peer logs when it serves them."""
    data = (json.dumps(scenario, indent=1) if isinstance(scenario, dict) else scenario).encode()
    temporary = peer.scenario_path + ".tmp"
    with open(temporary, "wb") as f:
        f.write(data)
    os.replace(temporary, peer.scenario_path)
    return hashlib.sha256(data).hexdigest()


def _log_size(peer):
    return os.path.getsize(peer.log_path) if os.path.exists(peer.log_path) else 0


def _wait_for_scenario_line(peer, name, offset, pattern, what, timeout):
    """The first line of a scenario server's log after byte `offset` that matches `pattern` (a compiled
    regex), as a match; a refusal line before it raises ScenarioRefused, the server exiting AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        with open(peer.log_path, "rb") as f:
            f.seek(offset)
            for line in f.read().decode("utf-8", errors="replace").splitlines():
                refused = re.search(r"scenario .* refused \(still serving sha256=\w+\): (.*)", line)
                if refused:
                    raise ScenarioRefused(refused.group(1))
                found = pattern.search(line)
                if found:
                    return found
        if peer.process is not None and peer.process.poll() is not None:
            raise AssertionError(f"{name} exited with {peer.process.returncode}: {peer.read_log()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: {peer.read_log()}")
        time.sleep(0.05)


class PodResources:
    """gpuscope-podresources (tests/tools/podresources/main.go): the kubelet's pod-resources gRPC service
    (List, GetAllocatableResources, Get) on a unix socket, answering from a JSON scenario
    (docs/design/kubernetes.md). `socket` is the path to give the agent (--kubernetes.pod-resources-socket);
    `scenario` is a dict (written as JSON) or a str (written as it is). set_scenario() changes what it
    serves mid-run; kill() leaves a stale socket as a crashed kubelet does, stop() removes it, start()
    binds the same path again (a restart)."""

    def __init__(self, binary, scenario, start=True, socket_mode="0600"):
        self.binary = binary
        # Short names: a unix socket path has at most 107 bytes, and the demo's tests nest temporary folders.
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-kubelet-")
        self.socket = os.path.join(self.workdir, "pr", "kubelet.sock")
        self.scenario_path = os.path.join(self.workdir, "scenario.json")
        self.log_path = os.path.join(self.workdir, "podresources.log")
        self.socket_mode = socket_mode
        self.process = None
        self._log = None
        _write_scenario(self, scenario)
        if start:
            self.start()


    def _wait_for_line(self, offset, pattern, what, timeout=30):
        return _wait_for_scenario_line(self, "gpuscope-podresources", offset, pattern, what, timeout)

    def start(self):
        """Starts the server on the same socket path (a stale socket there is replaced) and waits until it
        listens."""
        offset = _log_size(self)
        self._log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [self.binary, "--socket", self.socket, "--scenario", self.scenario_path, "--socket-mode", self.socket_mode],
            stdout=self._log, stderr=subprocess.STDOUT)
        self._wait_for_line(offset, re.compile("listening on unix " + re.escape(self.socket)),
                            "gpuscope-podresources to listen")

    def set_scenario(self, scenario):
        """Serves `scenario` from now on: returns once the running server logged that it serves these bytes,
        raises ScenarioRefused when it refused them (the last good scenario then stays served). With the
        server stopped, only writes the file (start() serves it)."""
        offset = _log_size(self)
        sha = _write_scenario(self, scenario)
        if self.process is not None and self.process.poll() is None:
            self._wait_for_line(offset, re.compile("serving scenario sha256=" + sha), "the new scenario to be served")

    def reload_on_sighup(self):
        """Sends SIGHUP and waits until the server logged serving the file again (changed or not)."""
        offset = _log_size(self)
        self.process.send_signal(signal.SIGHUP)
        self._wait_for_line(offset, re.compile("serving scenario sha256="), "the scenario to be served after SIGHUP")

    def kill(self):
        """kill -9, as a crashing kubelet: the socket file stays behind, stale."""
        self.process.kill()
        self.process.wait(timeout=30)
        self._log.close()
        self._log = None

    def restart(self):
        """The kubelet restarting: killed with -9 (a stale socket left) and started again on the same path."""
        self.kill()
        self.start()

    def socket_is_there(self):
        return os.path.lexists(self.socket) and stat.S_ISSOCK(os.lstat(self.socket).st_mode)

    def calls(self, method=None):
        """The calls answered so far, in order, as (method, outcome) from the log: ("List", "2 pods"),
        ("Get", "ml/trainer-0: served"), ...; only those of `method` when given."""
        out = []
        for line in self.read_log().splitlines():
            found = re.search(r" call (\w+):? (.*)$", line)
            if found and (method is None or found.group(1) == method):
                out.append((found.group(1), found.group(2)))
        return out

    def read_log(self):
        if not os.path.exists(self.log_path):
            return ""
        with open(self.log_path) as f:
            return f.read()

    stop = _stop
    cleanup = _cleanup


class KubeApi:
    """gpuscope-kubeapi (tests/tools/kubeapi/main.go): the Kubernetes API server's pod, pod list, ReplicaSet
    and Job endpoints on the upstream k8s.io/api types, with metav1.Status errors (401, 403, 404, 429),
    on 127.0.0.1, answering from a JSON scenario (dict or str). `tls`: {cert_file, key_file} serves https.
    set_scenario() changes what it serves mid-run; stop() and start() keep the port (the server down and
    back); requests() is its request log."""

    def __init__(self, binary, scenario, start=True, tls=None):
        self.binary = binary
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-kubeapi-")
        self.scenario_path = os.path.join(self.workdir, "scenario.json")
        self.log_path = os.path.join(self.workdir, "kubeapi.log")
        self.tls = tls
        self.port = harness.free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.process = None
        self._log = None
        _write_scenario(self, scenario)
        if start:
            self.start()

    def _wait_for_line(self, offset, pattern, what, timeout=30):
        return _wait_for_scenario_line(self, "gpuscope-kubeapi", offset, pattern, what, timeout)

    def start(self):
        """Starts the server on the same port and waits until it listens."""
        offset = _log_size(self)
        self._log = open(self.log_path, "a")
        command = [self.binary, "--listen", f"127.0.0.1:{self.port}", "--scenario", self.scenario_path]
        if self.tls:
            command += ["--cert", self.tls["cert_file"], "--key", self.tls["key_file"]]
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        self._wait_for_line(offset, re.compile("listening on https?://127.0.0.1:" + str(self.port)),
                            "gpuscope-kubeapi to listen")

    def set_scenario(self, scenario):
        """Serves `scenario` from now on (returns once served; ScenarioRefused when refused)."""
        offset = _log_size(self)
        sha = _write_scenario(self, scenario)
        if self.process is not None and self.process.poll() is None:
            self._wait_for_line(offset, re.compile("serving scenario sha256=" + sha), "the new scenario to be served")

    def requests(self):
        """Every request answered so far, in order, as (time in seconds since midnight, target, status)."""
        out = []
        for line in self.read_log().splitlines():
            found = re.search(r"(\d\d):(\d\d):(\d\d\.\d+) request GET (\S+) status=(\d+)$", line)
            if found:
                h, m, sec, target, status = found.groups()
                out.append((int(h) * 3600 + int(m) * 60 + float(sec), target, int(status)))
        return out

    def read_log(self):
        if not os.path.exists(self.log_path):
            return ""
        with open(self.log_path) as f:
            return f.read()

    stop = _stop
    cleanup = _cleanup


def attributes(key_values):
    """OTLP/JSON attributes [{key, value: {stringValue|intValue|...}}] as {key: value}."""
    out = {}
    for kv in key_values:
        value = kv.get("value", {})
        out[kv["key"]] = next(iter(value.values())) if value else None
    return out


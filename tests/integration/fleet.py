"""A simulated GPU fleet on loopback: several gpuscope-agent processes on the NVML simulator (one per node,
each with its own scenario, Hostname, Slurm job mapping files and kernel log), a real Prometheus scraping
them with the mixin's rules, a real Alertmanager with the mixin's routes, a webhook receiver that
records every notification, and (given its binary) an OpenTelemetry Collector that receives the training
nodes' traces into a file. Used by the alerting and dashboard integration tests and by the demo
(scripts/demo.sh runs `fleet.py demo`). Standard library only; builds on harness.py and peers.py.

    fleet.py demo --agent A --sim S [--otelcol C] [--podresources P] [--kubeapi K] [--rules-dir D] [--speed N] [--alerts-after S]
                  [--fleet-runner gpuscope-fleet --fleet-nodes N]
"""

import argparse
import dataclasses
import functools
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import kube_node  # noqa: E402
import peers  # noqa: E402
import security_node as security_node_module  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCENARIOS = os.path.join(ROOT, "sim", "scenarios")
FLEET_DESCRIPTION = os.path.join(ROOT, "sim", "fleets", "mixed.yaml")
MIXIN = os.path.join(ROOT, "deploy", "mixin")
GENERATED = os.path.join(MIXIN, "generated")


@dataclasses.dataclass(frozen=True)
class Job:
    """A Slurm job holding GPUs of a node, written as the prolog would (deploy/slurm/README.md)."""

    job_id: int
    user: str
    account: str
    partition: str
    job_name: str
    gpus: tuple = tuple(range(8))


@dataclasses.dataclass(frozen=True)
class Node:
    hostname: str
    scenario: str  # file name in sim/scenarios, or an absolute path
    job: Job = None
    speed: float = None  # simulated seconds per real second for this node; default the fleet's
    args: tuple = ()  # extra agent flags
    env: tuple = ()  # extra environment, "NAME=value"
    # Ranks of the job's training run (tests/integration/demo_trainer.py: real PyTorch DDP when torch is
    # installed, else synthetic; one process per GPU of the job from GPU 0) reporting to the agent's training
    # collector; 0: none. slow_gpu: the GPU whose rank slows when its NVLink link shows CRC errors (the
    # capstone incident).
    trainer_ranks: int = 0
    slow_gpu: int = None
    # A Kubernetes node (kube_node.KubeNode): its GPUs are held by pods, which the agent learns from the
    # kubelet's pod-resources API (the fleet's pod-resources peer) instead of Slurm mapping files.
    kubernetes: kube_node.KubeNode = None
    # DCGM (docs/design/dcgm.md): the agent loads the stand-in libdcgm.so.4 beside the NVML one (sim/dcgm/,
    # driven by the same scenario) with this --dcgm.mode ("embedded", or "hostengine": the scenario's
    # nv-hostengine, at its dcgm.address); None: no DCGM library, NVML only.
    dcgm: str = None
    # A user's profiling pause on the node (ProfilingPause), posted to the agent's API during the run.
    profiling_pause: "ProfilingPause" = None


@dataclasses.dataclass(frozen=True)
class ProfilingPause:
    """What `gpuscope profile-pause --for SECONDS --reason REASON` asks of a node's agent: POST
    /api/v1/profiling/pause with the bearer token of its --profiling.token-file, `after` seconds (real time)
    once Prometheus scrapes the fleet. The agent lifts the pause by itself `seconds` later."""

    after: float
    seconds: int
    reason: str


FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# Host views from fixture trees, so that the network and host panels have data on a machine without them:
# two InfiniBand HCAs and two RoCE/iWARP ports; a two-socket node's PCIe tree (one GPU link trained x8 of
# x16), NUMA placement and PSI files (tests/fixtures/{sysfs,procfs}/*/README).
WITH_INFINIBAND = ("--path.sysfs", os.path.join(FIXTURES, "sysfs", "infiniband"))
WITH_HOST_TOPOLOGY = ("--path.sysfs", os.path.join(FIXTURES, "sysfs", "host"),
                      "--path.procfs", os.path.join(FIXTURES, "procfs", "host"))

# The demo fleet: every shipped scenario that runs on its own (slurm-node.yaml needs a real Slurm).
DEMO_NODES = (
    Node("gpu-node-01", "h100-training.yaml", Job(4101, "alice", "llm", "train", "llama-finetune"),
         args=WITH_INFINIBAND),
    Node("gpu-node-02", "h100-nvlink-crc-incident.yaml", Job(4102, "bob", "llm", "train", "pretrain-7b"),
         trainer_ranks=8, slow_gpu=3),
    # Slower than the rest, so that its faults (15-60 s simulated) fall after Prometheus' first scrapes.
    Node("gpu-node-03", "h100-faults.yaml", Job(4103, "carol", "vision", "train", "vit-huge"), speed=2),
    Node("gpu-node-04", "h100-allocated-idle.yaml", Job(4104, "dave", "research", "interactive", "notebook")),
    Node("gpu-node-05", "h200-training.yaml", Job(4105, "erin", "llm", "train", "rlhf"), args=WITH_HOST_TOPOLOGY),
    Node("gpu-node-06", "a100-k8s-inference.yaml", kubernetes=kube_node.DEMO),
    # DCGM's profiling fields per MIG GPU instance (the A100 has no GPM), from an engine embedded in the agent.
    Node("gpu-node-07", "a100-mig.yaml", None, dcgm="embedded"),
    # DCGM through the node's nv-hostengine: health warns for GPU 2's InfoROM from the start and fails GPU 1's
    # memory at its DBE (30 s at x2, after Prometheus' first scrapes), nv-hostengine restarts at 45-50 s and
    # the agent reconnects; a user pauses profiling for a minute (ncu), which the dashboards annotate.
    Node("gpu-node-08", "a100-dcgm.yaml", Job(4108, "frank", "vision", "train", "detr-a100"), speed=2,
         dcgm="hostengine", args=("--dcgm.address", "localhost:5555"),
         profiling_pause=ProfilingPause(after=20, seconds=60, reason="ncu on job 4108 by frank")),
)


@functools.lru_cache(maxsize=1)
def torch_python():
    """An interpreter whose torch has torch.distributed (Debian's python3-torch is for /usr/bin/python3, not
    the project's virtual environment), or None."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if os.access(candidate, os.X_OK) and subprocess.run(
                [candidate, "-c", "import torch.distributed as d; assert d.is_available()"],
                capture_output=True).returncode == 0:
            return candidate
    return None


def write_job_mapping(directory, job):
    """The files deploy/slurm/prolog.sh writes: one per NVML index with the job id, and our job record."""
    os.makedirs(directory, exist_ok=True)
    if job is None:
        return
    for gpu in job.gpus:
        with open(os.path.join(directory, str(gpu)), "w") as f:
            f.write(f"{job.job_id}\n")
    gpus = ",".join(str(g) for g in job.gpus)
    with open(os.path.join(directory, f"gpuscope-job.{job.job_id}"), "w") as f:
        f.write(f"version=1\njob_id={job.job_id}\nuser={job.user}\nuid={2000 + job.job_id % 1000}\n"
                f"account={job.account}\npartition={job.partition}\njob_name={job.job_name}\n"
                f"array_job_id=\narray_task_id=\nstep_id=\ngpus={gpus}\nminors={gpus}\n")


class WebhookReceiver:
    """Alertmanager's webhook receivers all point here. Records each notification (the webhook payload:
    receiver, status, alerts[]) in memory and, when log_path is given, as one JSON line in that file."""

    def __init__(self, log_path=None, echo=False, port=0):
        self.notifications = []
        self._lock = threading.Lock()
        self._log = open(log_path, "a") if log_path else None
        self._echo = echo
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    payload = json.loads(body)
                except ValueError:
                    self.send_response(400)
                    self.end_headers()
                    return
                receiver._record(self.path, payload)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _record(self, path, payload):
        entry = {"path": path, "receiver": payload.get("receiver"), "status": payload.get("status"),
                 "alerts": payload.get("alerts", [])}
        with self._lock:
            self.notifications.append(entry)
            if self._log:
                self._log.write(json.dumps(entry, sort_keys=True) + "\n")
                self._log.flush()
        if self._echo:
            for alert in entry["alerts"]:
                labels = alert.get("labels", {})
                where = labels.get("Hostname") or labels.get("instance") or ""
                print(f"  notification -> {entry['receiver']}: [{alert.get('status')}] "
                      f"{labels.get('alertname')} {where} severity={labels.get('severity')}", flush=True)

    def received(self):
        """[(receiver, alert labels, alert status)] for every alert of every notification so far."""
        with self._lock:
            return [(n["receiver"], a.get("labels", {}), a.get("status")) for n in self.notifications
                    for a in n["alerts"]]

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        if self._log:
            self._log.close()


class Alertmanager:
    """A real Alertmanager (Debian package prometheus-alertmanager) on loopback, without clustering."""

    def __init__(self, config_path, workdir, binary=None, port=None):
        self.binary = binary or shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"
        self.port = port or harness.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        os.makedirs(os.path.join(workdir, "alertmanager-data"), exist_ok=True)
        self.log = open(os.path.join(workdir, "alertmanager.log"), "w")
        self.process = subprocess.Popen(
            [self.binary, f"--config.file={config_path}", f"--storage.path={workdir}/alertmanager-data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address="],
            stdout=self.log, stderr=subprocess.STDOUT)
        harness.wait_for(self._ready, 60, "Alertmanager to be ready")

    def _ready(self):
        if self.process.poll() is not None:
            raise AssertionError(f"alertmanager exited with {self.process.returncode}")
        return harness.http_get(self.url + "/-/ready")[0] == 200

    def alerts(self, active=True, silenced=True, inhibited=True):
        """The alerts Alertmanager holds (API v2): each with labels, status.state/inhibitedBy, receivers."""
        query = urllib.parse.urlencode({"active": str(active).lower(), "silenced": str(silenced).lower(),
                                        "inhibited": str(inhibited).lower()})
        return json.loads(harness.http_get(f"{self.url}/api/v2/alerts?{query}")[2])

    def post(self, alerts):
        """Posts alerts as Prometheus would: [{labels: {...}, annotations: {...}}], firing from now."""
        request = urllib.request.Request(self.url + "/api/v2/alerts", data=json.dumps(alerts).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status

    def stop(self):
        harness.terminate(self.process)
        self.log.close()


def jsonnet_json(expression):
    """The JSON value of a jsonnet expression (jsonnet is a dependency of the mixin)."""
    return json.loads(subprocess.run(["jsonnet", "-J", MIXIN, "-e", expression], check=True, capture_output=True,
                                     text=True).stdout)


def yaml_to_json(path):
    """Parses a YAML file with jsonnet's std.parseYaml (the tests use the standard library only)."""
    return jsonnet_json(f"std.parseYaml(importstr {json.dumps(os.path.abspath(path))})")


def point_webhooks_at(alertmanager_yaml, receiver_url):
    """The Alertmanager configuration with every webhook URL's scheme://host:port replaced by the receiver's
    (paths kept): the routes stay the mixin's, the notifications come here."""
    return re.sub(r"(url:\s*['\"]?)https?://[^/'\"\s]+", lambda m: m.group(1) + receiver_url, alertmanager_yaml)


# The generated files a running stack needs, relative to deploy/mixin/generated/ or a generated variant.
RULE_FILES = ("prometheus/recording_rules.yaml", "prometheus/alerting_rules.yaml")
ALERTMANAGER_CONFIG = "alertmanager/alertmanager.yml"


def generate_mixin(out_dir, overrides_file):
    """Generates the whole mixin into out_dir (the layout of deploy/mixin/generated/) with the config
    object's keys in overrides_file replaced: deploy/mixin/generate.sh --out --overrides. Returns out_dir."""
    subprocess.run([os.path.join(MIXIN, "generate.sh"), "--out", os.path.abspath(out_dir), "--overrides",
                    overrides_file], check=True, capture_output=True, text=True)
    return out_dir


def port_if_free(port):
    """port when nothing listens on 127.0.0.1:port, else None (then a free one is picked)."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
        return port
    except OSError:
        return None


class Fleet:
    """Starts an OpenTelemetry Collector (when otelcol, its binary, is given) whose file the training
    nodes' agents send their traces to (--sink.otlp.traces-url: slow steps), the nodes' agents, then
    Alertmanager (when alertmanager_config is given) with its webhooks pointing at a WebhookReceiver, then
    Prometheus scraping every agent as job="gpuscope" with rule_files and alerting to that Alertmanager.
    stop() ends them all in reverse order and removes the work dir.
    ports: fixed ports for the demo ({"agents": first, "prometheus", "alertmanager", "receiver"}), each
    used when free; by default every port is picked free."""

    def __init__(self, agent_binary, sim_library, nodes=DEMO_NODES, rule_files=(), alertmanager_config=None,
                 speed=None, receiver_log=None, echo_notifications=False, extra_agent_args=(), ports=None,
                 otelcol=None, podresources=None, kubeapi=None, fleet_runner=None, fleet_nodes=0,
                 security_node=None):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-fleet-")
        self.collector = None
        self.runner = None  # gpuscope-fleet: the larger fleet of the demo's --fleet
        self.agents = {}
        self.kubelets = {}  # hostname -> peers.PodResources of a Kubernetes node (given the peer's binary)
        self.api_servers = {}  # hostname -> peers.KubeApi of a Kubernetes node (given the peer's binary)
        self.kube_state_metrics = None
        self.trainers = []  # rank processes of the nodes' synthetic training runs
        # security_node: the hostname of the node whose agent feeds the Security view (eBPF as root, Falco
        # and Tetragon files) with a job process doing what it shows (tests/integration/security_node.py).
        self.security = None
        self.receiver = None
        self.alertmanager = None
        self.prometheus = None
        # hostname -> the agent's answer to a node's ProfilingPause (its JSON), or why it failed; the timers
        # that post them.
        self.pauses = {}
        self._pause_timers = []
        ports = ports or {}

        def wanted(name, offset=0):
            return port_if_free(ports[name] + offset) if name in ports else None

        try:
            if otelcol:
                self.collector = peers.OtelCollector(otelcol)
            for i, node in enumerate(nodes):
                port = wanted("agents", i)
                listen = ["--web.listen-address", f"127.0.0.1:{port}"] if port else []
                kubernetes = self._start_kubelet(node, podresources, kubeapi)
                security = []
                if node.hostname == security_node and node.job:
                    scenario = (node.scenario if os.path.isabs(node.scenario)
                                else os.path.join(SCENARIOS, node.scenario))
                    self.security = security_node_module.SecurityNode(
                        os.path.join(self.workdir, node.hostname, "security"), sim_library, scenario,
                        node.job.job_id)
                    security = self.security.agent_args()
                self.agents[node.hostname] = self._start_agent(agent_binary, sim_library, node, speed,
                                                               [*listen, *kubernetes, *security,
                                                                *extra_agent_args])
                if security:
                    self.security.start(self.agents[node.hostname])
                self._start_trainer(node)
            alerting = ""
            if alertmanager_config:
                self.receiver = WebhookReceiver(receiver_log or os.path.join(self.workdir, "webhook.log"),
                                                echo=echo_notifications, port=wanted("receiver") or 0)
                with open(alertmanager_config) as f:
                    config = point_webhooks_at(f.read(), self.receiver.url)
                path = os.path.join(self.workdir, "alertmanager.yml")
                with open(path, "w") as f:
                    f.write(config)
                self.alertmanager = Alertmanager(path, self.workdir, port=wanted("alertmanager"))
                alerting = ("alerting:\n  alertmanagers:\n"
                            f"    - static_configs: [{{targets: [\"127.0.0.1:{self.alertmanager.port}\"]}}]\n")
            kube_nodes = {n.hostname: n.kubernetes for n in nodes if n.kubernetes}
            scrape_extra = ""
            if fleet_runner and fleet_nodes > 0:
                scrape_extra += self._start_fleet_runner(fleet_runner, sim_library, fleet_nodes, speed)
            if kube_nodes:
                self.kube_state_metrics = kube_node.KubeStateMetricsStandIn(kube_nodes)
                scrape_extra += ("  - job_name: kube-state-metrics\n"
                                f"    static_configs: [{{targets: [\"{self.kube_state_metrics.target}\"]}}]\n")
            self.prometheus = harness.Prometheus([f"127.0.0.1:{a.port}" for a in self.agents.values()],
                                                 rule_files=rule_files, job_name="gpuscope",
                                                 scrape_extra=scrape_extra, extra_config=alerting,
                                                 port=wanted("prometheus"))
            # Pods are placed once Prometheus scrapes: waiting for a Kubernetes node's GPUs and processes
            # must not delay the first scrapes, which the scenarios' early faults need.
            for node in nodes:
                self._place_pods(node)
            for node in nodes:
                self._schedule_pause(node)
        except BaseException:
            self.stop()
            raise

    def _start_fleet_runner(self, binary, sim_library, nodes, speed):
        """Starts gpuscope-fleet with nodes of the mixed fleet (sim/fleets/mixed.yaml) and returns the scrape
        config of its targets: their own job with a site's 15 s interval, relabelled job="gpuscope" so that the
        mixin's selectors take them in with the demo's nodes."""
        file_sd = os.path.join(self.workdir, "fleet-targets.json")
        log = open(os.path.join(self.workdir, "gpuscope-fleet.log"), "w")
        args = [binary, "--fleet", FLEET_DESCRIPTION, "--nodes", str(nodes), "--file-sd", file_sd,
                "--state-dir", os.path.join(self.workdir, "fleet"), "--nvml.library", sim_library,
                "--log.level", "error"]
        if speed:
            args += ["--speed", str(speed)]
        self.runner = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.runner_log = log

        def written():
            if self.runner.poll() is not None:
                raise AssertionError(f"gpuscope-fleet exited with {self.runner.returncode}")
            return os.path.exists(file_sd)
        harness.wait_for(written, 120, "gpuscope-fleet's file_sd targets")
        return ("  - job_name: gpuscope-fleet\n"
                "    scrape_interval: 15s\n"
                f"    file_sd_configs: [{{files: [\"{file_sd}\"], refresh_interval: 15s}}]\n"
                "    relabel_configs: [{target_label: job, replacement: gpuscope}]\n")

    def _start_agent(self, binary, sim_library, node, speed, extra_args):
        home = os.path.join(self.workdir, node.hostname)
        jobs = os.path.join(home, "jobs")
        write_job_mapping(jobs, node.job)
        scenario = node.scenario if os.path.isabs(node.scenario) else os.path.join(SCENARIOS, node.scenario)
        kernel_log = os.path.join(home, "kern.log")
        env = {"GPUSCOPE_SIM_KERNEL_LOG": kernel_log, **dict(e.split("=", 1) for e in node.env)}
        if node.speed or speed:
            env["GPUSCOPE_SIM_SPEED"] = str(node.speed or speed)
        # The simulated pids are not this machine's processes: a node with a job gets it from the mapping
        # files only (/proc attribution could find strangers); a Kubernetes node reads its fixture /proc (its
        # processes in their pods' cgroups, _place_pods); another node without one reads /proc and finds none.
        training = []
        if node.trainer_ranks:
            training = ["--collector.training", "--collector.training.interval=1s",
                        f"--training.socket={os.path.join(home, 'training.sock')}"]
            if self.collector:
                training.append(f"--sink.otlp.traces-url={self.collector.url}/v1/traces")
        dcgm = []
        if node.dcgm:
            dcgm = ["--dcgm.library", os.path.join(os.path.dirname(os.path.abspath(sim_library)), "libdcgm.so.4"),
                    "--dcgm.mode", node.dcgm]
        # Every node has a profiling token, as a packaged node does (/etc/gpuscope/profiling.token): the fleet
        # posts a node's pause with it, and a user of the demo can too (gpuscope profile-pause --agent.token-file).
        token_file = os.path.join(home, "profiling.token")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(secrets.token_hex(16) + "\n")
        return harness.Agent(binary, sim_library, scenario, env=env, extra_args=[
            "--gpu.hostname", node.hostname, "--hpc-job-mapping-dir", jobs,
            "--attribution.device-map-file", os.path.join(home, "devices"),
            f"--attribution.proc={'false' if node.job else 'true'}",
            "--events.file", kernel_log, "--events.state-dir", os.path.join(home, "events"),
            "--profiling.token-file", token_file, *dcgm, *training, *node.args, *extra_args])

    def token_file(self, hostname):
        """The file holding the bearer token of the node's profiling API (its agent's --profiling.token-file)."""
        return os.path.join(self.workdir, hostname, "profiling.token")

    def _schedule_pause(self, node):
        """Posts the node's ProfilingPause to its agent `after` seconds from now, from a timer thread: the answer
        (or why there was none) lands in self.pauses."""
        pause = node.profiling_pause
        if pause is None:
            return
        agent = self.agents[node.hostname]
        with open(self.token_file(node.hostname)) as f:
            token = f.read().strip()

        def post():
            request = urllib.request.Request(
                agent.url + "/api/v1/profiling/pause", method="POST",
                data=json.dumps({"duration_seconds": pause.seconds, "reason": pause.reason}).encode(),
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
            try:
                # The agent answers once DCGM has applied the pause, within a few seconds.
                with urllib.request.urlopen(request, timeout=10) as response:
                    self.pauses[node.hostname] = json.loads(response.read())
            except (OSError, ValueError) as error:
                self.pauses[node.hostname] = f"POST /api/v1/profiling/pause failed: {error}"
        timer = threading.Timer(pause.after, post)
        timer.daemon = True
        timer.start()
        self._pause_timers.append(timer)

    def _start_kubelet(self, node, binary, kubeapi=None):
        """For a Kubernetes node with the pod-resources peer's binary: starts the node's kubelet stand-in with
        no pods yet (its GPU UUIDs are known once the agent runs) and, given the API-server peer's binary, the
        cluster's API server serving the node's pods (uids, owners, team labels); returns the agent's
        Kubernetes flags, with the node's fixture /proc (_place_pods writes its processes' pod cgroups)."""
        if not node.kubernetes or not binary:
            return []
        kubelet = peers.PodResources(binary, {"pods": [], "allocatable": []})
        self.kubelets[node.hostname] = kubelet
        api_server = "off"
        if kubeapi:
            api = peers.KubeApi(kubeapi, kube_node.api_server_scenario(node.kubernetes, node.hostname))
            self.api_servers[node.hostname] = api
            api_server = api.url
        procfs = os.path.join(self.workdir, node.hostname, "proc")
        os.makedirs(procfs, exist_ok=True)
        return ["--kubernetes", "--kubernetes.pod-resources-socket", kubelet.socket,
                "--kubernetes.node-name", node.hostname, "--kubernetes.api-server", api_server,
                "--path.procfs", procfs]

    def _place_pods(self, node):
        """Gives a Kubernetes node's running pods their GPUs in its kubelet, by the UUIDs the agent reports, and
        its simulated processes their pods' cgroups in the node's fixture /proc, by the pids it reports."""
        kubelet = self.kubelets.get(node.hostname)
        if kubelet is None:
            return
        agent = self.agents[node.hostname]
        uuids, pids = {}, {}
        held = sorted({g for p in node.kubernetes.running() for c in p.containers for g in c.gpus})

        def known():
            text = harness.http_get(agent.url + "/metrics")[2].decode()
            uuids.update(kube_node.gpu_uuids(text))
            pids.clear()
            pids.update(kube_node.gpu_pids(text))
            # Every GPU a pod holds shows its processes (each held GPU of the scenario runs at least one).
            return uuids and all(g in pids for g in held)

        harness.wait_for(known, 30, f"{node.hostname}'s GPU UUIDs and processes")
        kube_node.write_procfs(node.kubernetes, pids, os.path.join(self.workdir, node.hostname, "proc"))
        kubelet.set_scenario(kube_node.pod_resources_scenario(node.kubernetes, uuids))

    def _start_trainer(self, node):
        """The node's training ranks (demo_trainer.py), launched as srun would (rank, local rank, the job's
        GPUs): real PyTorch DDP on gloo when an interpreter here has torch.distributed, else synthetic."""
        if not node.trainer_ranks:
            return
        home = os.path.join(self.workdir, node.hostname)
        socket_path = os.path.join(home, "training.sock")
        harness.wait_for(lambda: os.path.exists(socket_path), 30, f"{node.hostname}'s training socket")
        gpus = ",".join(str(g) for g in node.job.gpus[:node.trainer_ranks])
        real = torch_python()
        python = real or sys.executable
        port = str(harness.free_port())
        for rank in range(node.trainer_ranks):
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("SLURM_", "GPUSCOPE_", "RANK", "PYTHON", "MASTER_"))}
            env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(node.trainer_ranks),
                       SLURM_JOB_ID=str(node.job.job_id), SLURM_STEP_GPUS=gpus,
                       GPUSCOPE_TRAINING_SOCKET=socket_path, OMP_NUM_THREADS="1",
                       GPUSCOPE_DEMO_METRICS_URL=self.agents[node.hostname].url + "/metrics",
                       GPUSCOPE_DEMO_SLOW_GPU="" if node.slow_gpu is None else str(node.slow_gpu))
            if real:
                env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            self.trainers.append(subprocess.Popen(
                [python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_trainer.py")],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def kill_agent(self, hostname):
        """SIGKILLs one node's agent (a crashed agent: no clean shutdown)."""
        agent = self.agents[hostname]
        agent.process.kill()
        agent.process.wait()

    def stop(self):
        for timer in self._pause_timers:
            timer.cancel()
        if self.security:
            self.security.stop()
        for process in self.trainers:
            process.kill()
            process.wait()
        if self.prometheus:
            self.prometheus.stop()
        if self.alertmanager:
            self.alertmanager.stop()
        if self.receiver:
            self.receiver.stop()
        for agent in self.agents.values():
            agent.stop()
            agent.cleanup()
        if self.runner:
            harness.terminate(self.runner)
            self.runner_log.close()
        for kubelet in self.kubelets.values():
            kubelet.cleanup()
        for api in self.api_servers.values():
            api.cleanup()
        if self.kube_state_metrics:
            self.kube_state_metrics.stop()
        if self.collector:
            self.collector.stop()
            self.collector.cleanup()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def slow_steps(self):
        """The traced slow steps in the Collector's file, newest first: one (job, step, [rank rows]) each,
        a rank row (rank, Hostname, gpu, step seconds, compute seconds, seconds in collectives,
        [(collective span name, seconds)])."""
        if not self.collector:
            return []
        steps, children = {}, {}
        for _, _, span in self.collector.spans():
            a = {k: int(v) if isinstance(v, str) and k in ("rank", "step") else v
                 for k, v in peers.attributes(span["attributes"]).items()}
            seconds = (int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"])) / 1e9
            if span["name"] == "train.step" and a.get("gpuscope.traced") == "slow":
                steps.setdefault((a["hpc_job"], a["step"]), {})[span["spanId"]] = (
                    a["rank"], a["Hostname"], a.get("gpu", ""), seconds, a["gpuscope.compute_seconds"],
                    a["gpuscope.collective_seconds"])
            elif "parentSpanId" in span:
                children.setdefault(span["parentSpanId"], []).append((span["name"], seconds))
        out = []
        for (job, step), ranks in sorted(steps.items(), key=lambda item: -item[0][1]):
            out.append((job, step, sorted(row + (children.get(span_id, []),) for span_id, row in ranks.items())))
        return out


def slow_steps_table(steps, limit=1):
    """The newest traced slow steps that every rank seen has reported (the newest step may still lack a
    rank whose spans wait for their grace), a line per rank, for the demo's printout."""
    most = max((len(ranks) for _, _, ranks in steps), default=0)
    lines = []
    for job, step, ranks in [s for s in steps if len(s[2]) == most][:limit]:
        lines.append(f"  job {job} step {step}:")
        for rank, host, gpu, seconds, compute, inside, collectives in ranks:
            names = ", ".join(f"{name} {s:.3f} s" for name, s in collectives) or "no collectives"
            lines.append(f"    rank {rank} ({host} GPU {gpu}): step {seconds:.3f} s, own work {compute:.3f} s, "
                         f"in collectives {inside:.3f} s ({names})")
    return "\n".join(lines) if lines else "  (none yet)"


def firing_alerts_table(alertmanager):
    rows = []
    for alert in alertmanager.alerts(inhibited=False, silenced=False):
        labels = alert["labels"]
        # A node and its GPU, link, XID and job; a Kubernetes pod or namespace (a quota or pending pod has
        # no node).
        workload = []
        if labels.get("pod"):
            workload = [f"pod {labels.get('namespace', '')}/{labels['pod']}"]
        elif labels.get("namespace"):
            workload = [f"namespace {labels['namespace']}"]
        node = labels.get("Hostname") or labels.get("node") or labels.get("instance")
        where = " ".join(([node] if node else [] if workload else ["-"]) +
                         [f"{k} {labels[k]}" for k in ("gpu", "link", "xid", "hpc_job") if labels.get(k)] + workload)
        receivers = ",".join(r["name"] for r in alert.get("receivers", []))
        rows.append((labels.get("severity", "-"), labels.get("alertname", "?"), where, labels.get("team", "-"),
                     receivers))
    rows.sort()
    if not rows:
        return "  (none yet)"
    widths = [max(len(r[i]) for r in rows + [("severity", "alert", "where", "team", "receiver")]) for i in range(5)]
    lines = ["  " + "  ".join(h.ljust(w) for h, w in zip(("severity", "alert", "where", "team", "receiver"), widths))]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


# The job whose `gpuscope job` report the demo prints with the firing alerts: the allocated-but-idle notebook.
DEMO_REPORT_JOB = 4104


def job_report(gpuscope, prometheus_url, job):
    """`gpuscope job JOB` against the fleet's Prometheus, as a person would run it (Slurm accounting off: the
    demo has no slurmdbd), or why it failed."""
    done = subprocess.run([gpuscope, "job", str(job), f"--prometheus.url={prometheus_url}", "--sacct=off"],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return f"gpuscope job {job} failed (exit {done.returncode}): {done.stderr.strip()}"
    return f"$ gpuscope job {job}\n{done.stdout.rstrip()}"


FAST_OVERRIDES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fast_mixin.libsonnet")
# The demo's receiver, runbook and Prometheus URLs over the committed files' placeholders (fast_mixin has them too).
DEMO_OVERRIDES = os.path.join(MIXIN, "demo.libsonnet")
DEMO_PORTS = {"prometheus": 9090, "alertmanager": 9093, "receiver": 9095, "agents": 9401}


def run_demo(args):
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    # The committed files carry placeholders a site sets (deploy/mixin/config.libsonnet): the demo generates
    # its own variant with its local URLs, unless given one, and removes it when it stops.
    variant = None if args.rules_dir else tempfile.mkdtemp(prefix="gpuscope-mixin-")
    try:
        rules_dir = args.rules_dir or generate_mixin(variant, FAST_OVERRIDES if args.fast else DEMO_OVERRIDES)
        run_demo_fleet(args, rules_dir, stop)
    finally:
        if variant:
            shutil.rmtree(variant, ignore_errors=True)


def run_demo_fleet(args, rules_dir, stop):
    rule_files = [os.path.join(rules_dir, f) for f in RULE_FILES]
    print(f"Starting {len(DEMO_NODES)} simulated GPU nodes (simulated time x{args.speed:g}), Prometheus and "
          f"Alertmanager with the {'fast variant of the ' if args.fast else ''}mixin's rules...", flush=True)
    fleet = Fleet(args.agent, args.sim, DEMO_NODES, rule_files=rule_files,
                  alertmanager_config=os.path.join(rules_dir, ALERTMANAGER_CONFIG),
                  speed=args.speed, receiver_log=args.webhook_log, echo_notifications=True, ports=DEMO_PORTS,
                  otelcol=args.otelcol, podresources=args.podresources, kubeapi=args.kubeapi,
                  fleet_runner=args.fleet_runner, fleet_nodes=args.fleet_nodes if args.fleet_runner else 0,
                  security_node="gpu-node-01")
    try:
        print("\ngpuscope demo: a simulated GPU fleet on loopback\n")
        for node in DEMO_NODES:
            agent = fleet.agents[node.hostname]
            if node.job:
                job = f"job {node.job.job_id} ({node.job.user}, account {node.job.account})"
            elif node.kubernetes:
                namespaces = sorted({p.namespace for p in node.kubernetes.running()})
                job = (f"Kubernetes: {len(node.kubernetes.running())} pods of {' and '.join(namespaces)}"
                       + ("" if node.hostname in fleet.kubelets else " (not placed: no pod-resources peer built)"))
            else:
                job = "no job"
            dcgm = f", DCGM {node.dcgm}" if node.dcgm else ""
            print(f"  {node.hostname}  {agent.url}/metrics  {node.scenario:30} {job}{dcgm}")
        if fleet.security:
            what = ("eBPF (CUDA memory, connections, checkpoint and dataset access of job "
                    f"{fleet.security.job_id}) and " if fleet.security.job else "")
            print(f"  gpu-node-01 also feeds the Security dashboard: {what}Falco and Tetragon events")
        if fleet.runner:
            print(f"  fleet-node-0001 .. {args.fleet_nodes:04d}  gpuscope-fleet: {args.fleet_nodes} more nodes of "
                  f"sim/fleets/mixed.yaml in one process (each the agent's own code, scraped every 15 s as "
                  f"job=\"gpuscope\"), with a churning job mix")
        print(f"\n  Prometheus     {fleet.prometheus.url}   (rules and alerts: {fleet.prometheus.url}/alerts)")
        print(f"  Alertmanager   {fleet.alertmanager.url}")
        print(f"  webhooks       {fleet.receiver.url}, log: {args.webhook_log or os.path.join(fleet.workdir, 'webhook.log')}")
        print(f"  dashboards     {os.path.join(rules_dir, 'dashboards')}: import into a Grafana with a Prometheus "
              f"datasource at {fleet.prometheus.url} (provisioning files: {os.path.join(rules_dir, 'grafana')})")
        if fleet.kube_state_metrics:
            print(f"  kube-state-metrics stand-in  http://{fleet.kube_state_metrics.target}/metrics (the Kubernetes "
                  f"node's pods, quotas and pending pods, as kube-state-metrics names them)")
        if fleet.collector:
            print(f"  traces         OpenTelemetry Collector at {fleet.collector.url}: the training job's slow steps "
                  f"and their collectives (OTLP/JSON, one request a line) in {fleet.collector.output}")
        else:
            print("  traces         off: no OpenTelemetry Collector built (scripts/build-peers.sh otelcol)")
        paused = [n for n in DEMO_NODES if n.profiling_pause]
        for node in paused:
            pause = node.profiling_pause
            url = fleet.agents[node.hostname].url
            print(f"  profiling      paused on {node.hostname} in {pause.after:g} s for {pause.seconds} s "
                  f"({pause.reason!r}) through its agent's API, as `gpuscope profile-pause` does; by hand: "
                  f"gpuscope profile-status --agent.url {url}; gpuscope profile-pause --for 2m --agent.url {url} "
                  f"--agent.token-file {fleet.token_file(node.hostname)}")
        print(f"\nFaults unfold over the next minutes: XIDs, ECC errors and a GPU off the bus on gpu-node-03 (at "
              f"simulated x2); on gpu-node-08 (x2, DCGM through its nv-hostengine) DCGM's health watches warn for "
              f"GPU 2's InfoROM and fail GPU 1's memory at its double-bit ECC error (30 s), then nv-hostengine "
              f"restarts (45 s) and the agent reconnects; NVLink CRC errors and XID 74 on gpu-node-02, where the "
              f"rank of job 4102 on GPU 3 "
              f"then slows (its own work crosses the bad link; the other ranks wait for it in every all-reduce) and "
              f"GpuTrainingStraggler names it; one step in ten then carries a burst of NVLink replays on that rank, "
              f"which every rank waits for in the all-reduce: those slow steps are traced. Notifications are printed "
              f"as Alertmanager sends them; the firing alerts, the latest traced slow step and job "
              f"{DEMO_REPORT_JOB}'s report (gpuscope job) in {args.alerts_after:g} s. "
              f"Ctrl-C stops everything.\n", flush=True)
        deadline = time.monotonic() + args.alerts_after
        while not stop.wait(1):
            if time.monotonic() >= deadline:
                print(f"\nFiring alerts in Alertmanager ({fleet.alertmanager.url}/api/v2/alerts), "
                      f"{time.strftime('%H:%M:%S')}:\n{firing_alerts_table(fleet.alertmanager)}\n", flush=True)
                if fleet.collector:
                    print(f"Latest traced slow step (spans in {fleet.collector.output}):\n"
                          f"{slow_steps_table(fleet.slow_steps())}\n", flush=True)
                for node in paused:
                    print(f"Profiling pause on {node.hostname}: {fleet.pauses.get(node.hostname, 'not posted yet')}\n",
                          flush=True)
                if args.gpuscope:
                    print(f"{job_report(args.gpuscope, fleet.prometheus.url, DEMO_REPORT_JOB)}\n", flush=True)
                if args.once:
                    break
                deadline = time.monotonic() + args.alerts_every
    finally:
        print("Stopping the fleet...", flush=True)
        fleet.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the demo fleet until SIGINT/SIGTERM")
    demo.add_argument("--agent", required=True, help="gpuscope-agent binary")
    demo.add_argument("--sim", required=True, help="the simulator's libnvidia-ml.so.1")
    demo.add_argument("--otelcol", help="an OpenTelemetry Collector binary (tests/tools/otelcol): receives the "
                                        "training node's traces; none when not given")
    demo.add_argument("--podresources", help="the pod-resources peer (tests/tools/podresources): the Kubernetes "
                                             "node's kubelet; its GPUs hold no pods when not given")
    demo.add_argument("--kubeapi", help="the API-server peer (tests/tools/kubeapi): the Kubernetes node's pod uids, "
                                        "owners and team labels; without it the agent runs with "
                                        "--kubernetes.api-server=off, and processes on its shared GPU get no pod")
    demo.add_argument("--gpuscope", help="the gpuscope command: prints `gpuscope job 4104` (the idle job's report) "
                                         "with the firing alerts; none when not given")
    demo.add_argument("--rules-dir", help="generated mixin folder (default: generated with demo.libsonnet, or "
                                          "fast_mixin.libsonnet with --fast)")
    demo.add_argument("--speed", type=float, default=10, help="simulated seconds per real second")
    demo.add_argument("--fleet-runner", help="gpuscope-fleet: adds --fleet-nodes simulated nodes of "
                      "sim/fleets/mixed.yaml beside the demo's own")
    demo.add_argument("--fleet-nodes", type=int, default=100, help="how many nodes gpuscope-fleet runs")
    demo.add_argument("--alerts-after", type=float, default=180, help="seconds before printing firing alerts")
    demo.add_argument("--alerts-every", type=float, default=120, help="seconds between later printouts")
    demo.add_argument("--webhook-log", help="file the webhook receiver appends notifications to")
    demo.add_argument("--once", action="store_true", help="exit after the first printout of firing alerts")
    demo.add_argument("--fast", action="store_true",
                      help="use the mixin with every for:/window shrunk (fast_mixin.libsonnet), as the tests do")
    args = parser.parse_args()
    if args.command == "demo":
        run_demo(args)


if __name__ == "__main__":
    main()

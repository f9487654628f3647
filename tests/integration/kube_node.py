"""A Kubernetes-style node for the simulated fleet: the pods that hold its GPUs, served to its agent by the
pod-resources peer (the kubelet's gRPC API, tests/tools/podresources) and the API-server peer (pods with
their uids, owners and labels, tests/tools/kubeapi), as cgroups of its simulated GPU processes in a fixture
/proc (the kubelet's pod cgroups, naming each pod's uid), and to Prometheus as the series
kube-state-metrics would export for them (no real API server runs here, so no real kube-state-metrics can:
the series are written from the same pod list, with kube-state-metrics' names and labels). Used by fleet.py
(the demo's gpu-node-06) and the dashboard and alerting tests. Standard library only.
"""

import dataclasses
import hashlib
import http.server
import os
import re
import threading
import time
import uuid


@dataclasses.dataclass(frozen=True)
class Container:
    name: str
    gpus: tuple = ()  # NVML indexes of the GPUs the device plugin gave it
    shared: bool = False  # a time-sliced replica of each GPU ("GPU-...::N" ids) rather than the whole GPU


@dataclasses.dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    containers: tuple  # of Container
    owner_kind: str = ""  # the top controller ("Deployment", "StatefulSet", "CronJob", ...); "" for a bare pod
    owner_name: str = ""
    team: str = ""  # the pod's `team` label
    phase: str = "Running"  # "Pending": requested GPUs and got none (not in pod-resources)
    age_seconds: int = 3600  # how long before the fleet's start the pod was created

    def gpu_request(self):
        return sum(len(c.gpus) for c in self.containers)

    @property
    def uid(self):
        """The pod's metadata.uid: fixed per namespace and name, so that a run's fixture /proc and API server
        agree."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"gpuscope-demo/{self.namespace}/{self.name}"))

    def controller(self):
        """(kind, name) of the pod's controlling ownerReference as the API server shows it: a Deployment's pod
        is owned by its ReplicaSet (the pod name less its random suffix), a CronJob's by its Job; None for a
        bare pod."""
        if not self.owner_kind:
            return None
        if self.owner_kind in ("Deployment", "CronJob"):
            return ({"Deployment": "ReplicaSet", "CronJob": "Job"}[self.owner_kind], self.name.rsplit("-", 1)[0])
        return self.owner_kind, self.owner_name


@dataclasses.dataclass(frozen=True)
class ResourceQuota:
    namespace: str
    name: str
    gpus_hard: int  # requests.nvidia.com/gpu


@dataclasses.dataclass(frozen=True)
class KubeNode:
    """What a node's kubelet and the cluster know: its pods (running ones hold GPUs through the device
    plugin, pending ones only request them) and the namespaces' GPU quotas."""

    pods: tuple
    quotas: tuple = ()
    replicas_per_shared_gpu: int = 4  # the time-slicing config's replicas for nvidia.com/gpu

    def running(self):
        return [p for p in self.pods if p.phase == "Running"]


# The demo's Kubernetes node (gpu-node-06, sim/scenarios/a100-k8s-inference.yaml): two namespaces of two
# teams. chat-serving's vLLM replicas (a Deployment) and its embedding server (a StatefulSet) on GPUs 0-4;
# research's nightly evaluation (a CronJob's Job) on GPU 5, alice's idle notebook on GPU 6, GPU 7
# time-sliced between bob's and carol's notebooks; research's 4-GPU training pod pending for 20 minutes
# because the namespace's quota of 4 GPUs is used up.
DEMO = KubeNode(
    pods=(
        Pod("chat-serving", "vllm-chat-6f7c9d8b5-2xk4p", (Container("vllm", (0, 1)),), "Deployment", "vllm-chat",
            "serving"),
        Pod("chat-serving", "vllm-chat-6f7c9d8b5-9hq7z", (Container("vllm", (2, 3)), Container("metrics-sidecar")),
            "Deployment", "vllm-chat", "serving"),
        Pod("chat-serving", "embed-0", (Container("server", (4,)),), "StatefulSet", "embed", "serving"),
        Pod("research", "eval-sweep-29107800-8kq2n", (Container("eval", (5,)),), "CronJob", "eval-sweep",
            "ml-research"),
        Pod("research", "nb-alice", (Container("notebook", (6,)),), "", "", "ml-research"),
        Pod("research", "nb-bob", (Container("notebook", (7,), shared=True),), "", "", "ml-research"),
        Pod("research", "nb-carol", (Container("notebook", (7,), shared=True),), "", "", "ml-research"),
        Pod("research", "train-llm-0", (Container("trainer", (0, 1, 2, 3)),), "StatefulSet", "train-llm",
            "ml-research", phase="Pending", age_seconds=1200),
    ),
    quotas=(ResourceQuota("research", "gpu-quota", 4), ResourceQuota("chat-serving", "gpu-quota", 8)),
)


def pod_resources_scenario(node, uuids):
    """The pod-resources peer's scenario (docs/design/kubernetes.md) for `node`, its GPUs named by `uuids`
    (NVML index -> UUID, as the agent reports them): whole GPUs as nvidia.com/gpu ids, shared GPUs as
    time-slicing replicas "UUID::N" (every replica allocatable, each pod holding one)."""
    shared = sorted({g for p in node.running() for c in p.containers if c.shared for g in c.gpus})
    allocatable = []
    for index, uuid in sorted(uuids.items()):
        if index in shared:
            ids = [f"{uuid}::{r}" for r in range(node.replicas_per_shared_gpu)]
        else:
            ids = [uuid]
        allocatable.append({"resource_name": "nvidia.com/gpu", "device_ids": ids, "numa_nodes": [0 if index < 4 else 1]})
    next_replica = {g: 0 for g in shared}
    pods = []
    for pod in node.running():
        containers = []
        for c in pod.containers:
            entry = {"name": c.name}
            ids = []
            for g in c.gpus:
                if c.shared:
                    ids.append(f"{uuids[g]}::{next_replica[g]}")
                    next_replica[g] += 1
                else:
                    ids.append(uuids[g])
            if ids:
                entry["devices"] = [{"resource_name": "nvidia.com/gpu", "device_ids": ids,
                                     "numa_nodes": [0 if c.gpus[0] < 4 else 1]}]
            containers.append(entry)
        pods.append({"namespace": pod.namespace, "name": pod.name, "containers": containers})
    return {"get": "served", "allocatable": allocatable, "pods": pods}


def api_server_scenario(node, node_name):
    """The API-server peer's scenario (tests/tools/kubeapi/main.go) for `node` named `node_name`: its running
    pods on that node with their uids, controlling owners and `team` labels, and the ReplicaSets and Jobs
    between them and their Deployments and CronJobs, so that the agent's gpuscope_k8s_pod_info resolves the
    owners kube_node.Pod names."""
    def owner_reference(kind, name):
        api = {"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "Deployment": "apps/v1", "Job": "batch/v1",
               "CronJob": "batch/v1"}[kind]
        return {"apiVersion": api, "kind": kind, "name": name, "controller": True,
                "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"gpuscope-demo/{kind}/{name}"))}

    pods, replicasets, jobs = [], [], []
    for pod in node.running():
        meta = {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid, "labels": {"team": pod.team}}
        controller = pod.controller()
        if controller:
            meta["ownerReferences"] = [owner_reference(*controller)]
            between = {"metadata": {"namespace": pod.namespace, "name": controller[1],
                                    "ownerReferences": [owner_reference(pod.owner_kind, pod.owner_name)]}}
            if controller[0] == "ReplicaSet" and between not in replicasets:
                replicasets.append(between)
            if controller[0] == "Job" and between not in jobs:
                jobs.append(between)
        pods.append({"metadata": meta, "spec": {"nodeName": node_name, "containers": [
            {"name": c.name, "image": "registry.example.com/" + c.name} for c in pod.containers]}})
    return {"pods": pods, "replicasets": replicasets, "jobs": jobs}


def holders(node, gpu):
    """The running containers holding NVML GPU `gpu`, as (pod, container), in pod order."""
    return [(p, c) for p in node.running() for c in p.containers if gpu in c.gpus]


def write_procfs(node, pids_by_gpu, root):
    """A fixture /proc under `root` for the simulated processes `pids_by_gpu` ({NVML index: [pid, ...]}) of
    `node`: <pid>/stat (proc(5), the start time fixed per pid), environ (empty) and cgroup, the cgroup v2 path
    the kubelet's systemd cgroup driver gives a Burstable pod's container
    (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with underscores>.slice/
    cri-containerd-<container id>.scope). On a GPU several containers share (time-slicing) the i-th process
    runs in the i-th holder; on a GPU of one container, every process in it. A GPU no pod holds gets no
    entries (the agent finds no such pid: not attributed)."""
    for gpu, pids in sorted(pids_by_gpu.items()):
        held = holders(node, gpu)
        for i, pid in enumerate(sorted(pids)):
            if not held:
                continue
            pod, container = held[min(i, len(held) - 1)]
            container_id = hashlib.sha256(f"{pod.uid}/{container.name}".encode()).hexdigest()
            directory = os.path.join(root, str(pid))
            os.makedirs(directory, exist_ok=True)
            files = {
                "stat": f"{pid} (python3) S 1 {pid} {pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {1000 + pid} "
                        "1000000 1000 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                "environ": "",
                "cgroup": "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
                          f"{pod.uid.replace('-', '_')}.slice/cri-containerd-{container_id}.scope\n",
            }
            for name, content in files.items():
                with open(os.path.join(directory, name), "w") as f:
                    f.write(content)


def gpu_pids(metrics_text):
    """NVML index -> pids of its processes, from an agent's gpuscope_gpu_process_memory_bytes."""
    pids = {}
    for line in metrics_text.splitlines():
        if line.startswith("gpuscope_gpu_process_memory_bytes{"):
            gpu = re.search(r'\bgpu="(\d+)"', line)
            pid = re.search(r'\bpid="(\d+)"', line)
            if gpu and pid:
                pids.setdefault(int(gpu.group(1)), set()).add(int(pid.group(1)))
    return pids


def _labels(pairs):
    return "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"


def kube_state_metrics(nodes, started):
    """The kube-state-metrics series for `nodes` ({node name: KubeNode}), pods created relative to
    `started` (Unix seconds): kube_pod_info, kube_pod_labels, kube_pod_status_phase, kube_pod_created,
    kube_pod_container_resource_requests{resource="nvidia_com_gpu"}, kube_node_status_allocatable and
    kube_resourcequota, with kube-state-metrics' label names (resource names sanitised: nvidia.com/gpu ->
    nvidia_com_gpu)."""
    families = {name: [] for name in (
        "kube_pod_info", "kube_pod_labels", "kube_pod_status_phase", "kube_pod_created",
        "kube_pod_container_resource_requests", "kube_node_status_allocatable", "kube_resourcequota")}
    for node_name, node in sorted(nodes.items()):
        families["kube_node_status_allocatable"].append(
            (_labels([("node", node_name), ("resource", "nvidia_com_gpu"), ("unit", "integer")]), 8))
        used = {}
        for pod in node.pods:
            where = node_name if pod.phase == "Running" else ""
            created_by_kind = {"Deployment": "ReplicaSet", "CronJob": "Job"}.get(pod.owner_kind, pod.owner_kind)
            families["kube_pod_info"].append((_labels([
                ("namespace", pod.namespace), ("pod", pod.name), ("node", where),
                ("created_by_kind", created_by_kind or "<none>"), ("created_by_name", pod.owner_name or "<none>")]), 1))
            families["kube_pod_labels"].append((_labels([
                ("namespace", pod.namespace), ("pod", pod.name), ("label_team", pod.team)]), 1))
            for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
                families["kube_pod_status_phase"].append((_labels([
                    ("namespace", pod.namespace), ("pod", pod.name), ("phase", phase)]), 1 if phase == pod.phase else 0))
            families["kube_pod_created"].append((_labels([("namespace", pod.namespace), ("pod", pod.name)]),
                                                 int(started - pod.age_seconds)))
            for c in pod.containers:
                if c.gpus:
                    families["kube_pod_container_resource_requests"].append((_labels([
                        ("namespace", pod.namespace), ("pod", pod.name), ("container", c.name), ("node", where),
                        ("resource", "nvidia_com_gpu"), ("unit", "integer")]), len(c.gpus)))
            if pod.phase == "Running":
                used[pod.namespace] = used.get(pod.namespace, 0) + pod.gpu_request()
        for quota in node.quotas:
            for kind, value in (("hard", quota.gpus_hard), ("used", used.get(quota.namespace, 0))):
                families["kube_resourcequota"].append((_labels([
                    ("namespace", quota.namespace), ("resourcequota", quota.name),
                    ("resource", "requests.nvidia.com/gpu"), ("type", kind)]), value))
    helps = {  # our words (stand-in series; kube-state-metrics' own help texts are not copied)
        "kube_pod_info": "Stand-in: a pod, its node and its creator. Always 1.",
        "kube_pod_labels": "Stand-in: a pod's labels as label_<name>. Always 1.",
        "kube_pod_status_phase": "Stand-in: 1 for the pod's phase, 0 for the others.",
        "kube_pod_created": "Stand-in: when the pod was created, Unix seconds.",
        "kube_pod_container_resource_requests": "Stand-in: what a container requests of a resource.",
        "kube_node_status_allocatable": "Stand-in: what a node can give pods of a resource.",
        "kube_resourcequota": "Stand-in: a namespace quota's hard limit and use of a resource.",
    }
    lines = []
    for name, samples in families.items():
        lines.append(f"# HELP {name} {helps[name]}")
        lines.append(f"# TYPE {name} gauge")
        lines.extend(f"{name}{labels} {value}" for labels, value in samples)
    return "\n".join(lines) + "\n"


class KubeStateMetricsStandIn:
    """Serves kube_state_metrics(nodes, started) on /metrics over HTTP on loopback, as the cluster's
    kube-state-metrics would (Prometheus scrapes it as job="kube-state-metrics")."""

    def __init__(self, nodes, started=None):
        body = kube_state_metrics(nodes, started if started is not None else time.time()).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                if self.path != "/metrics":
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.target = f"127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self):
        self._server.shutdown()
        self._server.server_close()


def gpu_uuids(metrics_text):
    """NVML index -> UUID from an agent's exposition (its DCGM_FI_DEV_GPU_TEMP or gpuscope_gpu_info)."""
    uuids = {}
    for line in metrics_text.splitlines():
        if line.startswith(("gpuscope_gpu_info{", "DCGM_FI_DEV_GPU_TEMP{")):
            gpu = re.search(r'\bgpu="(\d+)"', line)
            uuid = re.search(r'\bUUID="(GPU-[0-9a-fA-F-]+)"', line)
            if gpu and uuid:
                uuids[int(gpu.group(1))] = uuid.group(1)
    return uuids

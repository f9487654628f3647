"""Integration: the pod-resources test peer (tests/tools/podresources/main.go, the kubelet's PodResourcesLister
service from the upstream k8s.io/kubelet package on grpc-go, built by scripts/build-peers.sh) queried by a
client that is not ours: Python's grpcio (gRPC's C core, the same core as the C++ gRPC the agent will use),
with stubs generated at test time by grpcio-tools from the kubelet's api.proto that the server was built
from. Proves: List and GetAllocatableResources show the scenario's pods and devices as the kubelet renders
them (one entry per device id and NUMA node) with whole GPUs, MIG devices, a GPU time-sliced between two
pods and a resource name that is no GPU; changing the file changes the answer (pods start, move, end), so
does SIGHUP, and a bad file is refused while the last good one stays served; Get returns one pod, the
kubelet's error for an unknown pod, and Unimplemented or "disabled" as older kubelets answer; a server
killed with -9 leaves a stale socket, and the restart binds the same path and serves the client's same
channel again; SIGTERM removes the socket; the socket's mode; start-up errors.

Usage: podresources_peer_test.py PODRESOURCES_BINARY API_PROTO"""

import copy
import importlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import peers  # noqa: E402

import grpc  # noqa: E402  (grpcio, pinned in scripts/versions.env)

BINARY, API_PROTO = sys.argv[1:3]

# Four A100s as the NVIDIA device plugin advertises them (mixed MIG strategy): GPUs 0 and 1 in MIG mode
# (their MIG devices under nvidia.com/mig-<profile>, ids the MIG UUIDs), GPU 2 whole (id its UUID), GPU 3
# time-sliced into two replicas (the plugin's ids <UUID>::<replica>); and example.com/fpga, a resource
# name that is no GPU, on both NUMA nodes (fpga-0) or without topology (fpga-1).
GPU2 = "GPU-5e7a1c3d-0b2f-4c1e-9a8d-2f6b3c4d5e02"
GPU3 = "GPU-5e7a1c3d-0b2f-4c1e-9a8d-2f6b3c4d5e03"
MIG_3G = "MIG-0a1b2c3d-4e5f-5a6b-8c7d-9e0f1a2b3c01"
MIG_1G_A = "MIG-0a1b2c3d-4e5f-5a6b-8c7d-9e0f1a2b3c02"
MIG_1G_B = "MIG-0a1b2c3d-4e5f-5a6b-8c7d-9e0f1a2b3c03"


def dev(resource, ids, numa=None):
    group = {"resource_name": resource, "device_ids": ids}
    if numa is not None:
        group["numa_nodes"] = numa
    return group


SCENARIO = {
    "allocatable": [
        dev("nvidia.com/gpu", [GPU2], [0]),
        dev("nvidia.com/gpu", [GPU3 + "::0", GPU3 + "::1"], [1]),
        dev("nvidia.com/mig-3g.40gb", [MIG_3G], [0]),
        dev("nvidia.com/mig-1g.10gb", [MIG_1G_A, MIG_1G_B], [0]),
        dev("example.com/fpga", ["fpga-0"], [0, 1]),
        dev("example.com/fpga", ["fpga-1"]),
    ],
    "pods": [
        {"namespace": "ml-team", "name": "trainer-0", "containers": [
            {"name": "trainer", "devices": [dev("nvidia.com/gpu", [GPU2], [0])]},
            {"name": "sidecar"}]},
        {"namespace": "inference", "name": "llm-0", "containers": [
            {"name": "server", "devices": [dev("nvidia.com/mig-3g.40gb", [MIG_3G], [0])]}]},
        {"namespace": "inference", "name": "embed-0", "containers": [
            {"name": "server", "devices": [dev("nvidia.com/mig-1g.10gb", [MIG_1G_A], [0])]}]},
        {"namespace": "notebooks", "name": "alice", "containers": [
            {"name": "notebook", "devices": [dev("nvidia.com/gpu", [GPU3 + "::0"], [1])]}]},
        {"namespace": "notebooks", "name": "bob", "containers": [
            {"name": "notebook", "devices": [dev("nvidia.com/gpu", [GPU3 + "::1"], [1])]}]},
        {"namespace": "media", "name": "encoder", "containers": [
            {"name": "enc", "devices": [dev("example.com/fpga", ["fpga-0"], [0, 1])]}]},
    ],
}


def devices(entries):
    """ContainerDevices messages as (resource, ids, NUMA nodes or None when no topology is set)."""
    return [(d.resource_name, tuple(d.device_ids),
             tuple(n.ID for n in d.topology.nodes) if d.HasField("topology") else None) for d in entries]


def pods(response):
    """A ListPodResourcesResponse as {"namespace/name": {container: [devices...]}}, in answer order."""
    return {f"{p.namespace}/{p.name}": {c.name: devices(c.devices) for c in p.containers}
            for p in response.pod_resources}


class PodResourcesPeer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Stubs from the kubelet's api.proto, generated now (never committed).
        cls.stubs = tempfile.mkdtemp(prefix="gpuscope-podresources-stubs-")
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.dirname(API_PROTO),
                        "--python_out", cls.stubs, "--grpc_python_out", cls.stubs, os.path.basename(API_PROTO)],
                       check=True)
        sys.path.insert(0, cls.stubs)
        cls.api = importlib.import_module("api_pb2")
        cls.api_grpc = importlib.import_module("api_pb2_grpc")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.stubs, ignore_errors=True)

    def setUp(self):
        self.server = peers.PodResources(BINARY, SCENARIO)
        # Reconnection backoff short, as the agent's client needs it to be after a kubelet restart.
        self.channel = grpc.insecure_channel("unix://" + self.server.socket, options=[
            ("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 500)])
        self.client = self.api_grpc.PodResourcesListerStub(self.channel)

    def tearDown(self):
        if harness.failed(self):
            print(f"--- podresources log ---\n{self.server.read_log()[-4000:]}", file=sys.stderr)
        self.channel.close()
        self.server.cleanup()

    def list(self):
        return pods(self.client.List(self.api.ListPodResourcesRequest(), timeout=5))

    def get(self, namespace, name):
        return self.client.Get(self.api.GetPodResourcesRequest(pod_namespace=namespace, pod_name=name), timeout=5)

    def assert_rpc_error(self, call, code, details):
        with self.assertRaises(grpc.RpcError) as raised:
            call()
        self.assertEqual(raised.exception.code(), code)
        self.assertEqual(raised.exception.details(), details)

    def test_list_and_allocatable_show_the_scenarios_pods_and_devices_as_the_kubelet_does(self):
        self.assertEqual(self.list(), {
            "ml-team/trainer-0": {"trainer": [("nvidia.com/gpu", (GPU2,), (0,))], "sidecar": []},
            "inference/llm-0": {"server": [("nvidia.com/mig-3g.40gb", (MIG_3G,), (0,))]},
            "inference/embed-0": {"server": [("nvidia.com/mig-1g.10gb", (MIG_1G_A,), (0,))]},
            "notebooks/alice": {"notebook": [("nvidia.com/gpu", (GPU3 + "::0",), (1,))]},
            "notebooks/bob": {"notebook": [("nvidia.com/gpu", (GPU3 + "::1",), (1,))]},
            # A device on two NUMA nodes is listed once per node, as the kubelet lists it.
            "media/encoder": {"enc": [("example.com/fpga", ("fpga-0",), (0,)),
                                      ("example.com/fpga", ("fpga-0",), (1,))]},
        })
        allocatable = self.client.GetAllocatableResources(self.api.AllocatableResourcesRequest(), timeout=5)
        self.assertEqual(devices(allocatable.devices), [
            ("nvidia.com/gpu", (GPU2,), (0,)),
            ("nvidia.com/gpu", (GPU3 + "::0",), (1,)), ("nvidia.com/gpu", (GPU3 + "::1",), (1,)),
            ("nvidia.com/mig-3g.40gb", (MIG_3G,), (0,)),
            ("nvidia.com/mig-1g.10gb", (MIG_1G_A,), (0,)), ("nvidia.com/mig-1g.10gb", (MIG_1G_B,), (0,)),
            ("example.com/fpga", ("fpga-0",), (0,)), ("example.com/fpga", ("fpga-0",), (1,)),
            ("example.com/fpga", ("fpga-1",), None),
        ])
        self.assertEqual(self.server.calls(), [("List", "6 pods"), ("GetAllocatableResources", "8 devices")])

    def test_changing_the_file_changes_the_answer_as_pods_start_move_and_end(self):
        self.assertIn("ml-team/trainer-0", self.list())
        changed = copy.deepcopy(SCENARIO)
        pods_by_name = {p["name"]: p for p in changed["pods"]}
        changed["pods"].remove(pods_by_name["trainer-0"])  # ends
        changed["pods"].append({"namespace": "ml-team", "name": "trainer-1", "containers": [  # starts
            {"name": "trainer", "devices": [dev("nvidia.com/gpu", [GPU2], [0])]}]})
        pods_by_name["embed-0"]["containers"][0]["devices"] = [dev("nvidia.com/mig-1g.10gb", [MIG_1G_B], [0])]  # moves
        self.server.set_scenario(changed)
        now = self.list()
        self.assertNotIn("ml-team/trainer-0", now)
        self.assertEqual(now["ml-team/trainer-1"], {"trainer": [("nvidia.com/gpu", (GPU2,), (0,))]})
        self.assertEqual(now["inference/embed-0"], {"server": [("nvidia.com/mig-1g.10gb", (MIG_1G_B,), (0,))]})
        self.assertEqual(len(now), 6)

        # One GPU in two pods under the same device id (what a client must also survive): both are listed.
        shared = copy.deepcopy(changed)
        for p in shared["pods"]:
            if p["namespace"] == "notebooks":
                p["containers"][0]["devices"] = [dev("nvidia.com/gpu", [GPU3], [1])]
        self.server.set_scenario(shared)
        now = self.list()
        self.assertEqual(now["notebooks/alice"], {"notebook": [("nvidia.com/gpu", (GPU3,), (1,))]})
        self.assertEqual(now["notebooks/bob"], {"notebook": [("nvidia.com/gpu", (GPU3,), (1,))]})

        # Every pod gone: an empty answer, not an error.
        self.server.set_scenario({"allocatable": SCENARIO["allocatable"], "pods": []})
        self.assertEqual(self.list(), {})
        # SIGHUP reads the file again (here unchanged) and serves it.
        self.server.reload_on_sighup()
        self.assertEqual(self.list(), {})

    def test_a_bad_scenario_is_refused_and_the_last_good_one_stays_served(self):
        before = self.list()
        bad = [
            ('{"pods": [{"name": "x", "containers": []}]}', "pods[0]: namespace and name are required"),
            ('{"pods": [], "get": "sometimes"}', 'get: "sometimes" is none of served, disabled, unimplemented'),
            ('{"pod": []}', 'unknown field "pod"'),
            ('{"allocatable": [{"resource_name": "nvidia.com/gpu", "device_ids": ["a", "a"]}]}',
             'allocatable[0]: device "a" of nvidia.com/gpu listed twice'),
            ('{"pods": [{"namespace": "a", "name": "b", "containers": [{"name": "c", "devices": '
             '[{"resource_name": "nvidia.com/gpu", "device_ids": [""]}]}]}]}',
             "pods[0].containers[0].devices[0].device_ids[0]: empty device id"),
            ('{"pods": []', "unexpected EOF"),
            ('{"pods": []} {}', "data after the JSON object"),
        ]
        for text, reason in bad:
            with self.subTest(text=text):
                with self.assertRaises(peers.ScenarioRefused) as refused:
                    self.server.set_scenario(text)
                self.assertIn(reason, str(refused.exception))
                self.assertEqual(self.list(), before)
        self.server.set_scenario({"pods": []})
        self.assertEqual(self.list(), {})

    def test_get_returns_one_pod_or_the_errors_kubelets_of_each_age_answer(self):
        response = self.get("inference", "llm-0")
        self.assertEqual(pods(self.api.ListPodResourcesResponse(pod_resources=[response.pod_resources])),
                         {"inference/llm-0": {"server": [("nvidia.com/mig-3g.40gb", (MIG_3G,), (0,))]}})
        self.assert_rpc_error(lambda: self.get("inference", "gone-0"), grpc.StatusCode.UNKNOWN,
                              "pod gone-0 in namespace inference not found")

        # Kubelets before 1.27 have no Get: the client must fall back to List, which still answers.
        self.server.set_scenario(dict(SCENARIO, get="unimplemented"))
        self.assert_rpc_error(lambda: self.get("inference", "llm-0"), grpc.StatusCode.UNIMPLEMENTED,
                              "unknown method Get for service v1.PodResourcesLister")
        self.assertEqual(len(self.list()), 6)
        # 1.27 to 1.33 with the KubeletPodResourcesGet gate off (its default before 1.34).
        self.server.set_scenario(dict(SCENARIO, get="disabled"))
        self.assert_rpc_error(lambda: self.get("inference", "llm-0"), grpc.StatusCode.UNKNOWN,
                              "PodResources API Get method disabled")
        self.assertEqual(len(self.list()), 6)
        self.assertEqual(self.server.calls("Get"), [
            ("Get", "inference/llm-0: served"), ("Get", "inference/gone-0: not found"),
            ("Get", "inference/llm-0: unimplemented"), ("Get", "inference/llm-0: disabled")])

    def test_a_restart_on_the_stale_socket_serves_the_same_channel_again(self):
        self.assertEqual(len(self.list()), 6)
        self.server.kill()
        self.assertTrue(self.server.socket_is_there(), "kill -9 leaves the socket file behind")
        self.assert_rpc_error_code(grpc.StatusCode.UNAVAILABLE)
        # The kubelet comes back with other pods, on the stale path.
        self.server.set_scenario({"allocatable": SCENARIO["allocatable"], "pods": SCENARIO["pods"][:2]})
        self.server.start()
        self.assertIn("removed the stale socket " + self.server.socket, self.server.read_log())
        harness.wait_for(lambda: len(self.list()) == 2, 15, "the restarted server to answer on the same channel")
        # SIGTERM: the socket is removed, as the kubelet removes it on a clean stop.
        self.server.stop()
        self.assertFalse(os.path.lexists(self.server.socket))
        self.assert_rpc_error_code(grpc.StatusCode.UNAVAILABLE)

    def assert_rpc_error_code(self, code):
        with self.assertRaises(grpc.RpcError) as raised:
            self.client.List(self.api.ListPodResourcesRequest(), timeout=2)
        self.assertEqual(raised.exception.code(), code)

    def test_the_socket_is_created_with_the_mode_asked(self):
        self.assertEqual(stat.S_IMODE(os.lstat(self.server.socket).st_mode), 0o600)
        other = peers.PodResources(BINARY, SCENARIO, socket_mode="0660")
        try:
            self.assertEqual(stat.S_IMODE(os.lstat(other.socket).st_mode), 0o660)
        finally:
            other.cleanup()


class StartUpErrors(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-podresources-errors-")
        self.scenario = os.path.join(self.workdir, "scenario.json")
        with open(self.scenario, "w") as f:
            f.write('{"pods": []}')

    def tearDown(self):
        shutil.rmtree(self.workdir, ignore_errors=True)

    def run_server(self, *args):
        return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30)

    def test_a_bad_scenario_or_flag_stops_the_start_with_a_clear_error(self):
        socket = os.path.join(self.workdir, "kubelet.sock")
        with open(os.path.join(self.workdir, "bad.json"), "w") as f:
            f.write('{"pods": [{"namespace": "a", "name": "b", "containers": [{"name": ""}]}]}')
        cases = [
            (["--socket", socket, "--scenario", os.path.join(self.workdir, "bad.json")],
             "pods[0].containers[0]: name is required"),
            (["--socket", socket, "--scenario", os.path.join(self.workdir, "missing.json")], "no such file"),
            (["--socket", socket, "--scenario", self.scenario, "--socket-mode", "999"], "not an octal permission"),
            (["--scenario", self.scenario], "usage: gpuscope-podresources --socket PATH"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                result = self.run_server(*args)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(message, result.stderr)
                self.assertFalse(os.path.lexists(socket))

    def test_a_path_that_is_not_a_socket_is_never_replaced(self):
        path = os.path.join(self.workdir, "kubelet.sock")
        with open(path, "w") as f:
            f.write("not a socket")
        result = self.run_server("--socket", path, "--scenario", self.scenario)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(f"{path} exists and is not a socket: not replacing it", result.stderr)
        with open(path) as f:
            self.assertEqual(f.read(), "not a socket")


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""Integration: the demo's Kubernetes node as its peers see it. The pod-resources scenario kube_node.py writes
for the demo's pods is accepted and served by the real pod-resources peer (the kubelet's gRPC API) with whole
GPUs, time-slicing replicas and no pending pod; the kube-state-metrics stand-in's exposition passes
`promtool check metrics` and is scraped by real Prometheus with the series and labels the mixin reads.

Usage: kube_node_test.py PODRESOURCES PROTO"""

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import kube_node  # noqa: E402
import peers  # noqa: E402

PODRESOURCES, PROTO = sys.argv[1:3]
UUIDS = {i: f"GPU-00000000-0000-0000-0000-00000000000{i}" for i in range(8)}


class DemoPodsOnThePodResourcesPeer(unittest.TestCase):
    def test_the_peer_serves_every_running_pod_with_its_gpus_and_replicas(self):
        import grpc
        stubs = tempfile.mkdtemp(prefix="gpuscope-kube-node-stubs-")
        kubelet = peers.PodResources(PODRESOURCES, kube_node.pod_resources_scenario(kube_node.DEMO, UUIDS))
        try:
            subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.dirname(PROTO), "--python_out",
                            stubs, "--grpc_python_out", stubs, os.path.basename(PROTO)], check=True)
            sys.path.insert(0, stubs)
            api, api_grpc = importlib.import_module("api_pb2"), importlib.import_module("api_pb2_grpc")
            with grpc.insecure_channel("unix://" + kubelet.socket) as channel:
                response = api_grpc.PodResourcesListerStub(channel).List(api.ListPodResourcesRequest(), timeout=5)
        finally:
            kubelet.cleanup()
            shutil.rmtree(stubs, ignore_errors=True)
        by_pod = {(p.namespace, p.name): [(c.name, d.resource_name, i) for c in p.containers for d in c.devices
                                          for i in d.device_ids] for p in response.pod_resources}
        running = {(p.namespace, p.name) for p in kube_node.DEMO.running()}
        self.assertEqual(set(by_pod), running, "every running pod, and no pending one")
        self.assertNotIn(("research", "train-llm-0"), by_pod)
        self.assertEqual(by_pod[("chat-serving", "vllm-chat-6f7c9d8b5-2xk4p")],
                         [("vllm", "nvidia.com/gpu", UUIDS[0]), ("vllm", "nvidia.com/gpu", UUIDS[1])])
        bob = by_pod[("research", "nb-bob")]
        carol = by_pod[("research", "nb-carol")]
        self.assertEqual(len(bob), 1)
        self.assertEqual(len(carol), 1)
        self.assertTrue(bob[0][2].startswith(UUIDS[7] + "::") and carol[0][2].startswith(UUIDS[7] + "::"))
        self.assertNotEqual(bob[0][2], carol[0][2], "each notebook holds its own replica of the shared GPU")


class KubeStateMetricsStandIn(unittest.TestCase):
    def test_the_exposition_is_valid_and_carries_what_the_mixin_reads(self):
        text = kube_node.kube_state_metrics({"gpu-node-06": kube_node.DEMO}, started=1_800_000_000)
        check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
        self.assertEqual(check.returncode, 0, check.stdout.decode() + check.stderr.decode())
        stand_in = kube_node.KubeStateMetricsStandIn({"gpu-node-06": kube_node.DEMO})
        prometheus = harness.Prometheus([stand_in.target], job_name="kube-state-metrics")
        try:
            harness.wait_for(lambda: prometheus.query("kube_pod_status_phase"), 30, "the stand-in's series")
            requests = prometheus.query('sum by (namespace) (kube_pod_container_resource_requests'
                                        '{resource="nvidia_com_gpu"} * on (namespace, pod) group_left '
                                        'kube_pod_status_phase{phase="Running"})')
            self.assertEqual({r["metric"]["namespace"]: float(r["value"][1]) for r in requests},
                             {"chat-serving": 5.0, "research": 4.0})
            pending = prometheus.query('kube_pod_status_phase{phase="Pending"} == 1')
            self.assertEqual([r["metric"]["pod"] for r in pending], ["train-llm-0"])
            quota = prometheus.query('kube_resourcequota{namespace="research",type="used"}')
            self.assertEqual(float(quota[0]["value"][1]), 4.0, "research's quota is used up by its running pods")
            allocatable = prometheus.query('kube_node_status_allocatable{resource="nvidia_com_gpu"}')
            self.assertEqual(allocatable[0]["metric"]["node"], "gpu-node-06")
        finally:
            prometheus.stop()
            stand_in.stop()


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

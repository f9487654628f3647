"""Integration: the demo's Kubernetes node (gpu-node-06, sim/scenarios/a100-k8s-inference.yaml, pods in
kube_node.DEMO) as fleet.py runs it, end to end: the agent with --kubernetes against the kubelet's
pod-resources API (tests/tools/podresources) and the API server (tests/tools/kubeapi), both on the upstream
Kubernetes types, and a fixture /proc whose GPU processes sit in their pods' cgroups (the kubelet's systemd
driver layout, naming each pod's uid). Proves: each process on GPU 7, time-sliced between research/nb-bob
and research/nb-carol, carries its own pod (the uid in its cgroup matched to the API server's), in the
agent's exposition and in Prometheus; a process on a GPU one pod holds carries that pod and container;
gpuscope_k8s_pod_info has each pod's uid, top owner and team label. No wall-clock thresholds: each check
waits for the state, bounded by a generous deadline.

Usage: kubernetes_demo_node_test.py AGENT SIM_LIBRARY PODRESOURCES_BINARY KUBEAPI_BINARY"""

import dataclasses
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402
import kube_node  # noqa: E402

AGENT, SIM, PODRESOURCES, KUBEAPI = sys.argv[1:5]
NODE = dataclasses.replace(next(n for n in fleet.DEMO_NODES if n.kubernetes), speed=30)


def family(text, name):
    """The label sets of `name`'s samples; the exposition leaves out empty labels, so absent is ""."""
    return [dict(labels) for labels in harness.exposition_families(text).get(name, {})]


class KubernetesDemoNode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fleet = fleet.Fleet(AGENT, SIM, (NODE,), podresources=PODRESOURCES, kubeapi=KUBEAPI)
        cls.agent = cls.fleet.agents[NODE.hostname]

    @classmethod
    def tearDownClass(cls):
        cls.fleet.stop()

    def process_pods(self):
        """{gpu: sorted [(namespace, pod, container)]} of gpuscope_gpu_process_memory_bytes."""
        out = {}
        for labels in family(self.agent.metrics(), "gpuscope_gpu_process_memory_bytes"):
            out.setdefault(labels["gpu"], []).append(
                (labels.get("namespace", ""), labels.get("pod", ""), labels.get("container", "")))
        return {gpu: sorted(pods) for gpu, pods in out.items()}

    def test_each_process_on_the_time_sliced_gpu_carries_its_own_pod(self):
        wanted = [("research", "nb-bob", "notebook"), ("research", "nb-carol", "notebook")]
        harness.wait_for(lambda: self.process_pods().get("7") == wanted, 60,
                         f"GPU 7's two processes labelled {wanted}; last {self.process_pods().get('7')}")
        # And in Prometheus, as the mixin's GpuSharedNoisyNeighbour reads it.
        def in_prometheus():
            result = self.fleet.prometheus.query('gpuscope_gpu_process_memory_bytes{gpu="7",pod!=""}')
            return sorted(r["metric"]["pod"] for r in result) == ["nb-bob", "nb-carol"]
        harness.wait_for(in_prometheus, 60, "GPU 7's processes by pod in Prometheus")

    def test_a_process_on_a_gpu_one_pod_holds_carries_that_pod_and_container(self):
        harness.wait_for(lambda: self.process_pods().get("6") == [("research", "nb-alice", "notebook")], 60,
                         f"GPU 6's process on nb-alice; last {self.process_pods().get('6')}")
        pods = self.process_pods()
        self.assertEqual(set(pods.get("0", [])), {("chat-serving", "vllm-chat-6f7c9d8b5-2xk4p", "vllm")})
        self.assertEqual(set(pods.get("5", [])), {("research", "eval-sweep-29107800-8kq2n", "eval")})

    def test_pod_info_has_uid_owner_and_team_from_the_api_server(self):
        def info():
            return {(i["namespace"], i["pod"]): (i.get("uid", ""), i.get("owner_kind", ""), i.get("owner_name", ""),
                                                 i.get("label_team", ""))
                    for i in family(self.agent.metrics(), "gpuscope_k8s_pod_info")}
        wanted = {(p.namespace, p.name): (p.uid, p.owner_kind, p.owner_name, p.team)
                  for p in NODE.kubernetes.running()}
        self.assertIn(("research", "nb-bob"), wanted)
        try:
            harness.wait_for(lambda: info() == wanted, 60, "every pod's uid, owner and team")
        except AssertionError:
            self.assertEqual(info(), wanted)
            raise

    def test_the_fixture_proc_names_each_pod_s_uid_in_the_kubelet_s_cgroup_layout(self):
        root = os.path.join(self.fleet.workdir, NODE.hostname, "proc")
        cgroups = {}
        for pid in os.listdir(root):
            with open(os.path.join(root, pid, "cgroup")) as f:
                cgroups[int(pid)] = f.read()
        bob = kube_node.DEMO.pods[5]
        self.assertEqual(bob.name, "nb-bob")
        self.assertTrue(any(f"kubepods-burstable-pod{bob.uid.replace('-', '_')}.slice/cri-containerd-" in c
                            for c in cgroups.values()), cgroups)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

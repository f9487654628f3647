"""Integration: the agent with --kubernetes and the stand-in API server (tests/tools/kubeapi/main.go) on the
simulator. Until the kubelet side (pod-resources) is merged no pod holds a device, so what this proves is the
wiring: the agent lists its node's pods with the service-account token at start and never per scrape;
gpuscope_k8s_api_up and gpuscope_k8s_api_requests_total tell an unreachable API server, with a log line,
while the GPU series go on; --kubernetes.api-server=off makes no request. PodMetadataSource's lookups
with pods are proven in integration_kubernetes_api.

Usage: kubernetes_api_agent_test.py AGENT SIM_LIBRARY KUBEAPI_BINARY SCENARIOS_DIR"""

import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import peers  # noqa: E402
from harness import metric  # noqa: E402

AGENT, SIM, KUBEAPI, SCENARIOS = sys.argv[1:5]
SCENARIO = os.path.join(SCENARIOS, "h100-training.yaml")
LIST = "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-7"


class KubernetesApiAgentTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-k8s-agent-")
        self.token_file = os.path.join(self.workdir, "token")
        with open(self.token_file, "w") as f:
            f.write("sa-token\n")
        self.api = peers.KubeApi(KUBEAPI, {"tokens": ["sa-token"], "pods": [
            {"metadata": {"namespace": "ml", "name": "trainer-0"}, "spec": {"nodeName": "gpu-node-7"}}]})
        self.agent = None

    def tearDown(self):
        failed = harness.failed(self)
        if self.agent is not None:
            self.agent.finish(show_log=failed)
        if failed:
            print(f"--- kubeapi log ---\n{self.api.read_log()[-4000:]}", file=sys.stderr)
        self.api.cleanup()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def start_agent(self, api_server):
        self.agent = harness.Agent(AGENT, SIM, SCENARIO, env={"NODE_NAME": "gpu-node-7"},
                                   extra_args=["--no-collector.host", "--no-collector.infiniband", "--kubernetes",
                                               "--kubernetes.api-server", api_server,
                                               "--kubernetes.token-file", self.token_file,
                                               "--kubernetes.pod-labels", "team,app.kubernetes.io/name"])

    def test_lists_the_nodes_pods_with_the_token_once_and_never_per_scrape(self):
        self.start_agent(self.api.url)
        harness.wait_for(lambda: metric(self.agent, "gpuscope_k8s_api_up") == 1, 30, "gpuscope_k8s_api_up 1")
        for _ in range(10):
            self.assertIsNotNone(metric(self.agent, "DCGM_FI_DEV_GPU_UTIL"))
        time.sleep(1.5)  # more cycles of the source's thread (one a second): still nothing to ask
        self.assertEqual([(target, status) for _, target, status in self.api.requests()], [(LIST, 200)])
        self.assertEqual(metric(self.agent, "gpuscope_k8s_api_requests_total", resource="pod", result="ok"), 1)
        self.assertEqual(metric(self.agent, "gpuscope_k8s_api_pods_cached"), 0)  # the kubelet named no pod

    def test_gpu_series_go_on_with_the_api_server_unreachable_and_it_is_counted_and_logged(self):
        self.start_agent(f"http://127.0.0.1:{harness.free_port()}")
        harness.wait_for(lambda: (metric(self.agent, "gpuscope_k8s_api_requests_total", resource="pod",
                                         result="unreachable") or 0) >= 1, 30, "an unreachable request counted")
        self.assertEqual(metric(self.agent, "gpuscope_k8s_api_up"), 0)
        self.assertIsNotNone(metric(self.agent, "DCGM_FI_DEV_GPU_UTIL"))
        self.assertIn("kubernetes: API server request failed; keeping cached pod metadata", self.agent.read_log())

    def test_off_makes_no_request(self):
        self.start_agent("off")
        harness.wait_for(lambda: metric(self.agent, "gpuscope_k8s_api_requests_total") is not None, 30,
                         "the kubernetes_api collector's first cycle")
        time.sleep(1.5)
        self.assertEqual(metric(self.agent, "gpuscope_k8s_api_requests_total"), 0)
        self.assertIsNone(metric(self.agent, "gpuscope_k8s_api_up"))
        self.assertEqual(self.api.requests(), [])


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

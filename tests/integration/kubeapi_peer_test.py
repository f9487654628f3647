"""Integration: the stand-in Kubernetes API server (tests/tools/kubeapi/main.go, the upstream k8s.io/api
types and metav1.Status errors, built by scripts/build-peers.sh) queried by a client that is not ours
(Python's urllib). Proves: a pod, the node-filtered pod list, a ReplicaSet and a Job as the API server
renders them (kind, apiVersion, ownerReferences); 404, 401, 403 and 429 (with Retry-After) as metav1.Status
bodies with the API server's reasons; an unsupported field selector answered 400; answers cut in half on
demand; a changed scenario is
served and a bad one refused while the last good one stays; HTTPS with its certificate; the request log.

Usage: kubeapi_peer_test.py KUBEAPI_BINARY"""

import json
import os
import shutil
import ssl
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import peers  # noqa: E402

BINARY = sys.argv[1]


def pod(namespace, name, node, owner=None, labels=None):
    meta = {"namespace": namespace, "name": name, "uid": "uid-" + name, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "o",
                                    "controller": True}]
    return {"metadata": meta, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}}


SCENARIO = {
    "tokens": ["secret-token"],
    "pods": [pod("ml", "trainer-abc-1", "gpu-node-1", ("ReplicaSet", "trainer-abc"), {"team": "search"}),
             pod("ml", "other-0", "gpu-node-2", ("StatefulSet", "other"))],
    "replicasets": [{"metadata": {"namespace": "ml", "name": "trainer-abc", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "trainer", "uid": "d", "controller": True}]}}],
    "jobs": [{"metadata": {"namespace": "ml", "name": "nightly-1", "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "c", "controller": True}]}}],
}
AUTH = {"Authorization": "Bearer secret-token"}


def get(url, headers=None, context=None):
    """(status, headers, decoded JSON body) of a GET; HTTP errors are answers too."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


class KubeApiPeerTest(unittest.TestCase):
    def setUp(self):
        self.api = peers.KubeApi(BINARY, SCENARIO)
        self.addCleanup(self.api.cleanup)

    def test_serves_upstream_objects_and_the_node_filtered_list(self):
        status, _, body = get(self.api.url + "/api/v1/namespaces/ml/pods/trainer-abc-1", AUTH)
        self.assertEqual(status, 200)
        self.assertEqual((body["kind"], body["apiVersion"]), ("Pod", "v1"))
        self.assertEqual(body["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet")
        self.assertEqual(body["metadata"]["labels"], {"team": "search"})
        self.assertEqual(body["spec"]["nodeName"], "gpu-node-1")

        status, _, body = get(self.api.url + "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-1", AUTH)
        self.assertEqual((status, body["kind"]), (200, "PodList"))
        self.assertEqual([p["metadata"]["name"] for p in body["items"]], ["trainer-abc-1"])
        status, _, body = get(self.api.url + "/api/v1/pods", AUTH)
        self.assertEqual(len(body["items"]), 2)

        status, _, body = get(self.api.url + "/apis/apps/v1/namespaces/ml/replicasets/trainer-abc", AUTH)
        self.assertEqual((status, body["kind"], body["apiVersion"]), (200, "ReplicaSet", "apps/v1"))
        self.assertEqual(body["metadata"]["ownerReferences"][0]["name"], "trainer")
        status, _, body = get(self.api.url + "/apis/batch/v1/namespaces/ml/jobs/nightly-1", AUTH)
        self.assertEqual((status, body["kind"]), (200, "Job"))
        self.assertEqual(body["metadata"]["ownerReferences"][0]["kind"], "CronJob")

    def test_errors_are_metav1_status_bodies_with_the_api_servers_reasons(self):
        status, _, body = get(self.api.url + "/api/v1/namespaces/ml/pods/nope", AUTH)
        self.assertEqual(status, 404)
        self.assertEqual((body["kind"], body["reason"], body["code"]), ("Status", "NotFound", 404))
        self.assertEqual(body["message"], 'pods "nope" not found')
        status, _, body = get(self.api.url + "/apis/apps/v1/namespaces/ml/replicasets/nope", AUTH)
        self.assertEqual(body["message"], 'replicasets.apps "nope" not found')

        status, _, body = get(self.api.url + "/api/v1/pods")
        self.assertEqual((status, body["reason"]), (401, "Unauthorized"))
        status, _, body = get(self.api.url + "/api/v1/pods", {"Authorization": "Bearer wrong"})
        self.assertEqual(status, 401)

        status, _, body = get(self.api.url + "/api/v1/pods?fieldSelector=status.phase%3DRunning", AUTH)
        self.assertEqual((status, body["reason"]), (400, "BadRequest"))
        self.assertIn("field label not supported: status.phase", body["message"])

        self.api.set_scenario(dict(SCENARIO, forbid=["pods/list"]))
        status, _, body = get(self.api.url + "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-1", AUTH)
        self.assertEqual((status, body["reason"]), (403, "Forbidden"))
        self.assertIn('cannot list resource "pods" in API group "" at the cluster scope', body["message"])
        status, _, _ = get(self.api.url + "/api/v1/namespaces/ml/pods/trainer-abc-1", AUTH)
        self.assertEqual(status, 200)  # get stays allowed

        self.api.set_scenario(dict(SCENARIO, throttle_retry_after_seconds=3))
        status, headers, body = get(self.api.url + "/api/v1/pods", AUTH)
        self.assertEqual((status, headers["Retry-After"], body["reason"]), (429, "3", "TooManyRequests"))
        self.assertEqual(body["details"]["retryAfterSeconds"], 3)

        targets = [(target, status) for _, target, status in self.api.requests()]
        self.assertEqual(targets[-1], ("/api/v1/pods", 429))
        self.assertIn(("/api/v1/namespaces/ml/pods/nope", 404), targets)

    def test_malformed_bodies_cut_every_ok_answer_in_half(self):
        self.api.set_scenario(dict(SCENARIO, malformed_bodies=True))
        request = urllib.request.Request(self.api.url + "/api/v1/namespaces/ml/pods/trainer-abc-1", headers=AUTH)
        with urllib.request.urlopen(request, timeout=10) as response:
            self.assertEqual(response.status, 200)
            body = response.read()
        self.assertTrue(body.startswith(b'{"kind":"Pod"'))
        with self.assertRaises(json.JSONDecodeError):
            json.loads(body)
        status, _, body = get(self.api.url + "/api/v1/namespaces/ml/pods/nope", AUTH)  # errors stay whole
        self.assertEqual((status, body["reason"]), (404, "NotFound"))

    def test_a_bad_scenario_is_refused_and_the_last_good_one_stays_served(self):
        with self.assertRaises(peers.ScenarioRefused) as refused:
            self.api.set_scenario(dict(SCENARIO, forbid=["pods/delete"]))
        self.assertIn("forbid[0]", str(refused.exception))
        with self.assertRaises(peers.ScenarioRefused) as refused:
            self.api.set_scenario({"pods": [{"metadata": {"name": "x"}}]})
        self.assertIn("pods[0]: metadata.namespace and metadata.name are required", str(refused.exception))
        with self.assertRaises(peers.ScenarioRefused):
            self.api.set_scenario({"pods": [{"metadata": {"name": "x", "namespace": "y"}, "spec": {"bogus": 1}}]})
        status, _, _ = get(self.api.url + "/api/v1/namespaces/ml/pods/trainer-abc-1", AUTH)
        self.assertEqual(status, 200)

    def test_https_with_its_certificate(self):
        directory = tempfile.mkdtemp(prefix="gpuscope-kubeapi-certs-")
        self.addCleanup(shutil.rmtree, directory, True)
        certs = harness.make_certificates(directory)
        api = peers.KubeApi(BINARY, SCENARIO, tls={"cert_file": certs["server_cert"], "key_file": certs["server_key"]})
        self.addCleanup(api.cleanup)
        self.assertTrue(api.url.startswith("https://"))
        context = ssl.create_default_context(cafile=certs["ca"])
        status, _, body = get(api.url + "/api/v1/namespaces/ml/pods/trainer-abc-1", AUTH, context)
        self.assertEqual((status, body["kind"]), (200, "Pod"))


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

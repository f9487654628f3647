"""Integration: GPU series tied to pods by the real agent (--kubernetes) talking to the kubelet's
pod-resources API as the upstream k8s.io/kubelet PodResourcesLister service on grpc-go serves it
(tests/tools/podresources, built by scripts/build-peers.sh), on a unix socket, over gRPC's C++ client.

The simulator runs sim/scenarios/a100-mig.yaml (GPUs 0 and 1 in MIG mode, 2 and 3 whole). The kubelet's
device ids are the simulator's UUIDs, learned from the agent's own /metrics (gpuscope_gpu_up's UUID,
gpuscope_gpu_mig_instance_info's mig_uuid) before the pod scenario is written. Proves: a socket missing at
start is counted and the agent picks it up when it appears; pods that start, move and end (their labels
follow in the first GPU cycle after the first List that saw the change, and are gone as quickly); a MIG
device held by a pod labels that MIG instance's series; a GPU time-sliced between two pods gives two
copies of its series; the node's counts per resource; the kubelet killed with -9 (a stale socket left)
and started again: the GPU series never stop, the failures are counted, the labels stay meanwhile and
follow the restarted kubelet; ids the agent cannot join are counted by reason.

Timing is counted in the agent's GPU collection cycles (gpuscope_collector_runs_total) and the peer's
List calls, never in wall-clock thresholds.

Usage: kubernetes_pod_resources_test.py AGENT SIM_LIBRARY SCENARIOS_DIR PODRESOURCES_BINARY"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
import peers  # noqa: E402

AGENT, SIM, SCENARIOS, PODRESOURCES = sys.argv[1:5]
SCENARIO = os.path.join(SCENARIOS, "a100-mig.yaml")


def labels_of(line):
    return dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', line))


def dev(resource, ids, numa=None):
    group = {"resource_name": resource, "device_ids": ids}
    if numa is not None:
        group["numa_nodes"] = numa
    return group


def pod(namespace, name, *containers):
    return {"namespace": namespace, "name": name,
            "containers": [{"name": c, "devices": d} if d else {"name": c} for c, d in containers]}


class KubernetesPodResources(unittest.TestCase):
    def setUp(self):
        self.kubelet = peers.PodResources(PODRESOURCES, {"pods": []}, start=False)
        self.agent = harness.Agent(AGENT, SIM, SCENARIO, extra_args=[
            "--kubernetes", "--kubernetes.pod-resources-socket", self.kubelet.socket])
        self.gpu, self.mig = self.identities()

    def tearDown(self):
        failed = harness.failed(self)
        if failed:
            print(f"--- podresources log ---\n{self.kubelet.read_log()[-3000:]}", file=sys.stderr)
        self.agent.finish(show_log=failed)
        self.kubelet.cleanup()

    # ---- helpers ---------------------------------------------------------------------------------

    def series(self, name, text=None, **match):
        out = []
        for line in (text if text is not None else self.agent.metrics()).splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                labels = labels_of(line)
                if all(labels.get(k, "") == v for k, v in match.items()):
                    out.append((labels, float(line.rsplit(" ", 1)[1])))
        return out

    def value(self, name, **match):
        found = self.series(name, **match)
        return found[0][1] if found else None

    def identities(self):
        """{gpu index: UUID} and {(gpu index, GPU_I_ID): MIG UUID} as the agent shows them."""
        def after_first_cycle():
            text = self.agent.metrics()
            return text if "gpuscope_gpu_mig_instance_info{" in text else None
        text = harness.wait_for(after_first_cycle, 30, "the agent's first GPU cycle")
        gpus = {labels["gpu"]: labels["UUID"] for labels, _ in self.series("gpuscope_gpu_up", text)}
        migs = {(labels["gpu"], labels["GPU_I_ID"]): labels["mig_uuid"]
                for labels, _ in self.series("gpuscope_gpu_mig_instance_info", text)}
        self.assertEqual(sorted(gpus), ["0", "1", "2", "3"])
        return gpus, migs

    def gpu_cycles(self):
        return int(self.value("gpuscope_collector_runs_total", collector="gpu") or 0)

    def after_next_list(self):
        """Waits until the kubelet answered one more List, then until a GPU cycle that started after that
        answer has completed: the first cycle that must show what the List said."""
        lists = len(self.kubelet.calls("List"))
        harness.wait_for(lambda: len(self.kubelet.calls("List")) > lists, 30, "the agent's next List call")
        start = self.gpu_cycles()
        harness.wait_for(lambda: self.gpu_cycles() >= start + 2, 30, "two more GPU cycles")

    def wait_for_up(self, value):
        """The source's self-metrics come with the attribution sources' collector (every 5 s), not with
        the GPU cycle: waits for its next report."""
        harness.wait_for(lambda: self.value("gpuscope_k8s_pod_resources_up") == value, 30,
                         f"gpuscope_k8s_pod_resources_up {value}")

    def holders(self, family="DCGM_FI_DEV_FB_USED", **match):
        """{(gpu, GPU_I_ID): sorted "namespace/pod/container"} over the family's series."""
        out = {}
        for labels, _ in self.series(family, **match):
            key = (labels["gpu"], labels.get("GPU_I_ID", ""))
            out.setdefault(key, []).append(f'{labels.get("namespace", "")}/{labels.get("pod", "")}/'
                                           f'{labels.get("container", "")}')
        return {k: sorted(v) for k, v in out.items()}

    def scenario(self, pods, allocatable=None):
        if allocatable is None:
            allocatable = [dev("nvidia.com/gpu", [self.gpu["2"]], [0]),
                           dev("nvidia.com/gpu", [self.gpu["3"] + "::0", self.gpu["3"] + "::1"], [1]),
                           dev("nvidia.com/mig-3g.40gb", [self.mig[("0", "1")], self.mig[("1", "1")]], [0]),
                           dev("nvidia.com/mig-1g.10gb", [self.mig[("0", "13")], self.mig[("0", "14")]], [0])]
        return {"allocatable": allocatable, "pods": pods}

    # ---- tests -----------------------------------------------------------------------------------

    def test_a_missing_socket_is_counted_and_the_agent_picks_it_up_when_it_appears(self):
        harness.wait_for(lambda: (self.value("gpuscope_k8s_pod_resources_calls_total", method="List",
                                              result="socket_missing") or 0) >= 1, 30, "a socket_missing call")
        self.assertEqual(self.value("gpuscope_k8s_pod_resources_up"), 0)
        self.assertEqual(len(self.series("gpuscope_gpu_up")), 4, "GPU series flow without a kubelet")
        self.assertEqual(self.holders("gpuscope_gpu_up")[("2", "")], ["//"], "empty pod labels")
        self.assertEqual(self.series("gpuscope_k8s_gpus_allocatable"), [], "no counts before an answer")

        self.kubelet.set_scenario(self.scenario([
            pod("ml-team", "trainer-0", ("trainer", [dev("nvidia.com/gpu", [self.gpu["2"]], [0])]), ("sidecar", None))]))
        self.kubelet.start()
        self.after_next_list()
        self.assertEqual(self.holders()[("2", "")], ["ml-team/trainer-0/trainer"])
        self.wait_for_up(1)
        self.assertEqual(self.kubelet.calls("GetAllocatableResources")[:1], [("GetAllocatableResources", "7 devices")],
                         "asked once the connection is made")

    def test_pods_that_start_move_and_end_are_followed_within_one_cycle(self):
        self.kubelet.set_scenario(self.scenario([]))
        self.kubelet.start()
        self.after_next_list()
        self.assertEqual(self.holders()[("2", "")], ["//"])

        # Pods start: a whole GPU, a MIG device of each profile, GPU 3 time-sliced between two notebooks.
        self.kubelet.set_scenario(self.scenario([
            pod("ml-team", "trainer-0", ("trainer", [dev("nvidia.com/gpu", [self.gpu["2"]], [0])])),
            pod("inference", "llm-0", ("server", [dev("nvidia.com/mig-3g.40gb", [self.mig[("0", "1")]], [0])])),
            pod("inference", "embed-0", ("server", [dev("nvidia.com/mig-1g.10gb", [self.mig[("0", "13")]], [0])])),
            pod("notebooks", "alice", ("notebook", [dev("nvidia.com/gpu", [self.gpu["3"] + "::0"], [1])])),
            pod("notebooks", "bob", ("notebook", [dev("nvidia.com/gpu", [self.gpu["3"] + "::1"], [1])])),
        ]))
        self.after_next_list()
        whole = self.holders("DCGM_FI_DEV_GPU_UTIL")
        self.assertEqual(whole[("2", "")], ["ml-team/trainer-0/trainer"])
        self.assertEqual(whole[("3", "")], ["notebooks/alice/notebook", "notebooks/bob/notebook"],
                         "one copy of the time-sliced GPU's series per pod")
        mig = self.holders("DCGM_FI_DEV_FB_USED", gpu="0")
        self.assertEqual(mig[("0", "1")], ["inference/llm-0/server"])
        self.assertEqual(mig[("0", "13")], ["inference/embed-0/server"])
        self.assertEqual(mig[("0", "14")], ["//"], "an unallocated MIG instance")
        shared = {labels["pod"]: labels["shared"] for labels, _ in self.series("gpuscope_k8s_gpu_allocation_info", gpu="3")}
        self.assertEqual(shared, {"alice": "true", "bob": "true"})
        info = self.series("gpuscope_k8s_gpu_allocation_info", pod="llm-0")
        self.assertEqual([(l["GPU_I_ID"], l["resource"], l["UUID"]) for l, _ in info],
                         [("1", "nvidia.com/mig-3g.40gb", self.gpu["0"])])
        self.assertEqual(self.value("gpuscope_k8s_gpus_allocatable", resource="nvidia.com/gpu"), 3)
        self.assertEqual(self.value("gpuscope_k8s_gpus_allocated", resource="nvidia.com/gpu"), 3)
        self.assertEqual(self.value("gpuscope_k8s_gpus_allocatable", resource="nvidia.com/mig-1g.10gb"), 2)
        self.assertEqual(self.value("gpuscope_k8s_gpus_allocated", resource="nvidia.com/mig-1g.10gb"), 1)

        # The trainer moves from GPU 2 to GPU 1's 3g.40gb MIG device; the notebooks and embed-0 end.
        self.kubelet.set_scenario(self.scenario([
            pod("ml-team", "trainer-0", ("trainer", [dev("nvidia.com/mig-3g.40gb", [self.mig[("1", "1")]], [0])])),
            pod("inference", "llm-0", ("server", [dev("nvidia.com/mig-3g.40gb", [self.mig[("0", "1")]], [0])])),
        ]))
        self.after_next_list()
        whole = self.holders("DCGM_FI_DEV_GPU_UTIL")
        self.assertEqual(whole[("2", "")], ["//"], "the moved pod's labels left its old GPU")
        self.assertEqual(whole[("3", "")], ["//"], "the ended pods' labels are gone, one series again")
        self.assertEqual(self.holders("DCGM_FI_DEV_FB_USED", gpu="1")[("1", "1")], ["ml-team/trainer-0/trainer"])
        self.assertEqual(self.holders("DCGM_FI_DEV_FB_USED", gpu="0")[("0", "13")], ["//"])
        self.assertEqual(self.series("gpuscope_k8s_gpu_allocation_info", pod="alice"), [])
        self.assertEqual(self.value("gpuscope_k8s_gpus_allocated", resource="nvidia.com/gpu"), 0)

    def test_a_kubelet_killed_and_restarted_on_its_stale_socket_stops_no_gpu_series(self):
        self.kubelet.set_scenario(self.scenario([
            pod("ml-team", "trainer-0", ("trainer", [dev("nvidia.com/gpu", [self.gpu["2"]], [0])]))]))
        self.kubelet.start()
        self.after_next_list()
        allocatable_calls = len(self.kubelet.calls("GetAllocatableResources"))
        warnings_before = self.agent.read_log().count("pod-resources API call failed")
        self.kubelet.kill()
        self.assertTrue(self.kubelet.socket_is_there(), "kill -9 leaves the socket, stale")
        harness.wait_for(lambda: (self.value("gpuscope_k8s_pod_resources_calls_total", method="List",
                                              result="unavailable") or 0) >= 1, 30, "an unavailable call")
        start = self.gpu_cycles()
        harness.wait_for(lambda: self.gpu_cycles() >= start + 2, 30, "GPU cycles while the kubelet is down")
        self.assertEqual(len(self.series("gpuscope_gpu_up")), 4, "the GPU series never stop")
        self.wait_for_up(0)
        self.assertEqual(self.holders()[("2", "")], ["ml-team/trainer-0/trainer"],
                         "the last view is kept while the kubelet restarts")
        self.assertEqual(self.agent.read_log().count("pod-resources API call failed") - warnings_before, 1,
                         "one warning for the streak, not one per cycle")

        # The kubelet comes back (on the same, stale, path) with the pod moved to GPU 3.
        self.kubelet.set_scenario(self.scenario([
            pod("ml-team", "trainer-0", ("trainer", [dev("nvidia.com/gpu", [self.gpu["3"] + "::0"], [1])]))]))
        self.kubelet.start()
        self.after_next_list()
        self.wait_for_up(1)
        whole = self.holders("DCGM_FI_DEV_GPU_UTIL")
        self.assertEqual(whole[("2", "")], ["//"])
        self.assertEqual(whole[("3", "")], ["ml-team/trainer-0/trainer"])
        self.assertGreater(len(self.kubelet.calls("GetAllocatableResources")), allocatable_calls,
                           "the new connection asks for the allocatable devices again")
        self.assertIn("pod-resources API answering again", self.agent.read_log())

    def test_ids_the_agent_cannot_join_are_counted_by_resource_and_reason(self):
        self.kubelet.set_scenario(self.scenario(
            [pod("media", "encoder", ("enc", [dev("example.com/fpga", ["fpga-0"], [0, 1])])),
             pod("old", "indexed", ("c", [dev("nvidia.com/gpu", ["0"])])),
             pod("elsewhere", "p", ("c", [dev("nvidia.com/gpu", ["GPU-00000000-0000-0000-0000-000000000000"])]))],
            allocatable=[dev("nvidia.com/gpu", ["0", "1"]), dev("example.com/fpga", ["fpga-0", "fpga-1"], [0, 1])]))
        self.kubelet.start()
        self.after_next_list()
        self.wait_for_up(1)
        ignored = {(l["resource"], l["reason"]): v for l, v in self.series("gpuscope_k8s_devices_ignored")}
        self.assertEqual(ignored, {("example.com/fpga", "other_resource"): 2, ("nvidia.com/gpu", "index_id"): 2,
                                   ("nvidia.com/gpu", "unknown_device"): 1})
        self.assertEqual({k: v for k, v in self.holders("DCGM_FI_DEV_GPU_UTIL").items()},
                         {("2", ""): ["//"], ("3", ""): ["//"]}, "nothing joined")


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

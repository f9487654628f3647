"""Component: the Helm chart (deploy/kubernetes/helm/gpuscope) rendered by the pinned helm and checked offline.

Each values set (the defaults, ci/minimal-values.yaml, ci/maximal-values.yaml) is rendered with `helm template`
and every object goes through gpuscope-kubevalidate (strict decoding into k8s.io/api and the
prometheus-operator's types, the API's schema as server-side apply checks it, structural checks); the
validator is shown to fail on a misspelt field, a wrong type, a duplicate list key, a missing kind or
apiVersion and a selector that selects nothing, and values.schema.json to refuse
bad values. The least-privilege table of deploy/kubernetes/README.md is checked feature by feature on the
rendered pod. The chart cannot drift from the agent: every flag it passes is in `gpuscope-agent --help`,
every key of its agent.yml is a key of the agent's configuration reference (--print-config-docs) with a
value of the same type, and the agent runs a collection on the simulator with each rendered agent.yml and
container args (Hostname = the node).

Usage: kubernetes_deploy_test.py HELM KUBEVALIDATE AGENT REPO_ROOT SIM_LIBRARY"""

import copy
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

HELM, KUBEVALIDATE, AGENT, ROOT, SIM = sys.argv[1:6]
CHART = os.path.join(ROOT, "deploy", "kubernetes", "helm", "gpuscope")
VALUES = {
    "default": [],
    "minimal": [os.path.join(CHART, "ci", "minimal-values.yaml")],
    "maximal": [os.path.join(CHART, "ci", "maximal-values.yaml")],
}


def helm_template(values_files=(), sets=()):
    cmd = [HELM, "template", "gpuscope", CHART, "--namespace", "gpuscope"]
    for f in values_files:
        cmd += ["--values", f]
    for s in sets:
        cmd += ["--set", s]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def render(values_files=(), sets=()):
    result = helm_template(values_files, sets)
    if result.returncode != 0:
        raise AssertionError(f"helm template failed: {result.stderr}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def validate(docs):
    """Runs the validator on the objects; returns (exit status, output)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)
        path = f.name
    try:
        result = subprocess.run([KUBEVALIDATE, path], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    return result.returncode, result.stdout + result.stderr


def find(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} objects of kind {kind}")
    return found[0]


def pod_of(docs):
    return find(docs, "DaemonSet")["spec"]["template"]["spec"]


def agent_container(docs):
    (container,) = [c for c in pod_of(docs)["containers"] if c["name"] == "agent"]
    return container


def host_paths(pod):
    """{host path: read-only?} of the pod's hostPath volumes, by their mounts in the agent container."""
    mounts = {m["name"]: m.get("readOnly", False) for c in pod["containers"] for m in c.get("volumeMounts", [])}
    return {v["hostPath"]["path"]: mounts[v["name"]] for v in pod["volumes"] if "hostPath" in v}


def added_capabilities(container):
    return set(container["securityContext"].get("capabilities", {}).get("add", []))


def agent_yml(docs):
    return yaml.safe_load(find(docs, "ConfigMap")["data"]["agent.yml"])


def flags_of(container):
    return {re.match(r"--([a-z0-9.-]+)", a).group(1) for a in container["args"]}


def leaves(tree, prefix=""):
    """Dotted key path -> value of every leaf of a nested mapping (lists and scalars are leaves)."""
    out = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(leaves(value, path + "."))
        else:
            out[path] = value
    return out


class RenderedObjectsAreValid(unittest.TestCase):
    KINDS = {
        "default": {"ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Service", "DaemonSet"},
        "minimal": {"ConfigMap", "Service", "DaemonSet"},
        "maximal": {"ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding", "Service", "DaemonSet",
                    "ServiceMonitor", "PodMonitor"},
    }

    def test_each_values_set_renders_objects_the_validator_accepts(self):
        for name, files in VALUES.items():
            with self.subTest(values=name):
                docs = render(files)
                self.assertEqual({d["kind"] for d in docs}, self.KINDS[name])
                status, output = validate(docs)
                self.assertEqual(status, 0, output)
                self.assertEqual(output.count(": ok"), len(docs), output)

    def test_node_name_comes_from_the_downward_api(self):
        container = agent_container(render())
        (env,) = [e for e in container["env"] if e["name"] == "NODE_NAME"]
        self.assertEqual(env["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName")
        self.assertIn("--kubernetes.node-name=$(NODE_NAME)", container["args"])
        self.assertIn("--gpu.hostname=$(NODE_NAME)", container["args"])

    def test_gpu_nodes_are_selected_and_their_taint_tolerated(self):
        pod = pod_of(render())
        self.assertEqual(pod["nodeSelector"], {"nvidia.com/gpu.present": "true"})
        self.assertIn({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, pod["tolerations"])
        self.assertEqual(pod["runtimeClassName"], "nvidia")
        env = {e["name"]: e.get("value") for e in agent_container(render())["env"]}
        self.assertEqual(env["NVIDIA_VISIBLE_DEVICES"], "all")

    def test_cluster_role_allows_only_the_api_server_lookups(self):
        rules = find(render(), "ClusterRole")["rules"]
        granted = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]
                   for v in rule["verbs"]}
        self.assertEqual(granted, {("", "pods", "get"), ("", "pods", "list"), ("apps", "replicasets", "get"),
                                   ("batch", "jobs", "get")})

    def test_monitors_scrape_the_metrics_port_on_dcgm_exporters_number(self):
        docs = render(VALUES["maximal"])
        service = find(docs, "Service")
        self.assertEqual(service["spec"]["ports"][0]["port"], 9400)
        self.assertEqual(find(docs, "ServiceMonitor")["spec"]["endpoints"][0]["port"], "metrics")
        self.assertEqual(find(docs, "PodMonitor")["spec"]["podMetricsEndpoints"][0]["port"], "metrics")


class ValidatorRejectsBadObjects(unittest.TestCase):
    def setUp(self):
        self.docs = render(VALUES["maximal"])

    def rejected(self, docs, *words):
        status, output = validate(docs)
        self.assertEqual(status, 1, output)
        for word in words:
            self.assertIn(word, output)

    def test_a_misspelt_field(self):
        docs = copy.deepcopy(self.docs)
        port = pod_of(docs)["containers"][0]["ports"][0]
        port["containerPortt"] = port.pop("containerPort")
        self.rejected(docs, 'unknown field "spec.template.spec.containers[0].ports[0].containerPortt"')

    def test_a_misspelt_field_of_a_service_monitor(self):
        docs = copy.deepcopy(self.docs)
        find(docs, "ServiceMonitor")["spec"]["endpoints"][0]["intervall"] = "10s"
        self.rejected(docs, "ServiceMonitor", 'unknown field "spec.endpoints[0].intervall"')

    def test_a_value_of_the_wrong_type(self):
        docs = copy.deepcopy(self.docs)
        agent_container(docs)["livenessProbe"]["periodSeconds"] = "ten"
        self.rejected(docs, "periodSeconds", "int32")

    def test_a_bad_quantity(self):
        docs = copy.deepcopy(self.docs)
        agent_container(docs)["resources"]["limits"]["memory"] = "256 megabytes"
        self.rejected(docs, "DaemonSet", "quantities must match")

    def test_a_duplicate_key_in_an_associative_list(self):
        # Strict decoding takes two env entries of one name; the API's schema (server-side apply) does not.
        docs = copy.deepcopy(self.docs)
        container = agent_container(docs)
        container["env"].append(dict(container["env"][0]))
        self.rejected(docs, "schema:", 'duplicate entries for key [name="NODE_NAME"]')

    def test_a_missing_kind_or_api_version(self):
        for field in ("kind", "apiVersion"):
            with self.subTest(field=field):
                docs = copy.deepcopy(self.docs)
                del find(docs, "ConfigMap")[field]
                self.rejected(docs, f"{field} is missing")

    def test_a_container_without_image_and_a_selector_missing_the_template(self):
        docs = copy.deepcopy(self.docs)
        del agent_container(docs)["image"]
        find(docs, "DaemonSet")["spec"]["selector"]["matchLabels"]["tier"] = "gpu"
        self.rejected(docs, "containers[agent].image is missing", "spec.selector does not select the pods")

    def test_a_service_selecting_no_pod(self):
        docs = copy.deepcopy(self.docs)
        find(docs, "Service")["spec"]["selector"]["app.kubernetes.io/name"] = "other"
        self.rejected(docs, "selects no pod template")

    def test_a_port_out_of_range_and_a_mount_of_no_volume(self):
        docs = copy.deepcopy(self.docs)
        container = agent_container(docs)
        container["ports"][0]["containerPort"] = 70000
        container["volumeMounts"].append({"name": "nowhere", "mountPath": "/nowhere"})
        self.rejected(docs, "containerPort 70000", 'names volume "nowhere"')


class SchemaRejectsBadValues(unittest.TestCase):
    def refused(self, setting, *words):
        result = helm_template(sets=[setting])
        self.assertNotEqual(result.returncode, 0, f"{setting} was accepted")
        self.assertIn("schema", result.stderr)
        for word in words:
            self.assertIn(word, result.stderr)

    def test_a_port_out_of_range(self):
        self.refused("port=70000", "/port")

    def test_an_unknown_kernel_log_source(self):
        self.refused("events.kernelLog=dmesg", "/events/kernelLog")

    def test_a_misspelt_key(self):
        self.refused("collectors.gpu.intervall=1s", "intervall")

    def test_an_unknown_dcgm_mode_or_a_malformed_host_engine_address(self):
        self.refused("dcgm.mode=remote", "/dcgm/mode")
        self.refused("dcgm.address=http://nvidia-dcgm:5555", "/dcgm/address")

    def test_a_remote_write_url_without_scheme(self):
        self.refused("sinks.remoteWrite.urls={mimir:9009/api/v1/push}", "/sinks/remoteWrite/urls")

    def test_the_defaults_pass(self):
        self.assertEqual(helm_template().returncode, 0)


class LeastPrivilege(unittest.TestCase):
    """deploy/kubernetes/README.md's table: each feature adds its own mounts, capabilities and privilege."""

    def test_minimal_runs_as_nobody_without_host_access(self):
        docs = render(VALUES["minimal"])
        pod, container = pod_of(docs), agent_container(docs)
        self.assertEqual(pod["securityContext"]["runAsUser"], 65534)
        self.assertTrue(pod["securityContext"]["runAsNonRoot"])
        self.assertEqual(host_paths(pod), {})
        self.assertFalse(pod["automountServiceAccountToken"])
        self.assertNotIn("hostPID", pod)
        sc = container["securityContext"]
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertFalse(sc["privileged"])
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertTrue(sc["readOnlyRootFilesystem"])

    def test_defaults_add_only_read_only_host_mounts_and_user_0(self):
        docs = render()
        pod, container = pod_of(docs), agent_container(docs)
        self.assertEqual(host_paths(pod), {"/var/lib/kubelet/pod-resources": True, "/proc": True, "/sys": True,
                                           "/var/log/journal": True, "/var/lib/gpuscope": False})
        self.assertEqual(pod["securityContext"]["runAsUser"], 0)
        self.assertEqual(container["securityContext"]["capabilities"], {"drop": ["ALL"]})
        self.assertFalse(container["securityContext"]["privileged"])
        self.assertTrue(pod["automountServiceAccountToken"])

    # feature: (--set values on top of minimal, host paths it adds {path: read-only}, capabilities added,
    #           privileged, user 0, hostPID)
    FEATURES = {
        "kubernetes": (["kubernetes.enabled=true"], {"/var/lib/kubelet/pod-resources": True}, set(), False, True,
                       False),
        "kernel log from the journal": (["events.kernelLog=journal"],
                                        {"/var/log/journal": True, "/var/lib/gpuscope": False}, set(), False, True,
                                        False),
        "kernel log from /dev/kmsg": (["events.kernelLog=kmsg"], {"/dev/kmsg": True, "/var/lib/gpuscope": False},
                                      set(), True, True, False),
        "job logs": (["events.logFiles={/var/log/slurm/slurmd.log}"],
                     {"/var/log": True, "/var/lib/gpuscope": False}, set(), False, True, False),
        "/proc attribution": (["procAttribution=true"], {"/proc": True}, {"DAC_READ_SEARCH", "SYS_PTRACE"}, False,
                              True, False),
        "host collector": (["collectors.host.enabled=true"], {"/proc": True, "/sys": True}, set(), False, False,
                           False),
        "infiniband collector": (["collectors.infiniband.enabled=true"], {"/sys": True}, set(), False, False, False),
        "job mapping": (["mapping.enabled=true"], {"/run/gpuscope": False}, set(), False, True, False),
        "training": (["collectors.training.enabled=true"], {"/run/gpuscope": False}, set(), False, True, True),
        "eBPF": (["ebpf.enabled=true", "ebpf.watchDirs={/lustre/checkpoints}"],
                 {"/proc": True, "/sys/kernel/btf": True, "/lustre/checkpoints": True},
                 {"BPF", "PERFMON", "SYS_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH"}, False, True, False),
        "eBPF without the cuda uprobes": (["ebpf.enabled=true", "ebpf.programs={connect,files}"],
                                          {"/proc": True, "/sys/kernel/btf": True},
                                          {"BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH"}, False, True, False),
        "push sink": (["sinks.loki.url=http://loki:3100/loki/api/v1/push"], {"/var/lib/gpuscope": False}, set(),
                      False, True, False),
        # nv-hostengine holds DCGM's privileges: the agent only connects to it (the GPU Operator's Service).
        "DCGM through nv-hostengine": (["dcgm.mode=hostengine", "dcgm.address=nvidia-dcgm.gpu-operator.svc:5555"],
                                       {}, set(), False, False, False),
        # DCGM's profiling module in the agent, on a driver that restricts profiling to admin users (the default).
        "DCGM embedded": (["dcgm.mode=embedded"], {}, {"SYS_ADMIN"}, False, True, False),
        "DCGM embedded, profiling open to every user": (["dcgm.mode=embedded", "dcgm.profilingAdmin=false"], {},
                                                        set(), False, False, False),
        "profiling pause token": (["profiling.tokenSecret=gpuscope-profiling"], {}, set(), False, False, False),
    }

    def test_each_feature_adds_only_what_it_needs(self):
        for feature, (sets, paths, caps, privileged, root, host_pid) in self.FEATURES.items():
            with self.subTest(feature=feature):
                docs = render(VALUES["minimal"], sets)
                pod, container = pod_of(docs), agent_container(docs)
                self.assertEqual(host_paths(pod), paths)
                self.assertEqual(container["securityContext"].get("privileged"), privileged)
                if not privileged:
                    self.assertEqual(added_capabilities(container), caps)
                    self.assertEqual(container["securityContext"]["capabilities"]["drop"], ["ALL"])
                self.assertEqual(pod["securityContext"]["runAsUser"], 0 if root else 65534)
                self.assertEqual(pod.get("hostPID", False), host_pid)
                status, output = validate(docs)
                self.assertEqual(status, 0, output)

    def test_the_profiling_token_is_the_secret_s_key_mounted_read_only_as_the_agent_s_token_file(self):
        docs = render(VALUES["minimal"], ["profiling.tokenSecret=gpuscope-profiling", "profiling.tokenKey=t"])
        pod, container = pod_of(docs), agent_container(docs)
        (volume,) = [v for v in pod["volumes"] if v["name"] == "profiling-token"]
        self.assertEqual(volume["secret"], {"secretName": "gpuscope-profiling", "items": [{"key": "t", "path": "t"}]})
        (mount,) = [m for m in container["volumeMounts"] if m["name"] == "profiling-token"]
        self.assertTrue(mount["readOnly"])
        self.assertEqual(agent_yml(docs)["profiling"]["token_file"], mount["mountPath"] + "/t")
        self.assertNotIn("profiling", agent_yml(render(VALUES["minimal"])))

    def test_rbac_and_token_only_with_api_server_lookups(self):
        docs = render(sets=["kubernetes.apiServer=off"])
        self.assertEqual({d["kind"] for d in docs} & {"ClusterRole", "ClusterRoleBinding"}, set())
        self.assertFalse(pod_of(docs)["automountServiceAccountToken"])


class ChartMatchesTheAgent(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        help_text = subprocess.run([AGENT, "--help"], capture_output=True, text=True, timeout=30, check=True).stdout
        cls.agent_flags = set(re.findall(r"--(?:no-)?([a-z][a-z0-9.-]*[a-z0-9])", help_text))
        docs_text = subprocess.run([AGENT, "--print-config-docs"], capture_output=True, text=True, timeout=30,
                                   check=True).stdout
        block = re.search(r"```yaml\n(.*?)```", docs_text, re.S).group(1)
        cls.agent_keys = leaves(yaml.safe_load(block))

    def test_every_flag_the_chart_passes_exists_in_the_agent(self):
        self.assertIn("web.listen-address", self.agent_flags)  # the --help parse found the flags
        for name, files in VALUES.items():
            with self.subTest(values=name):
                unknown = flags_of(agent_container(render(files))) - self.agent_flags
                self.assertEqual(unknown, set(), "flags the agent does not have")

    def test_every_config_key_exists_in_the_agent_with_its_type(self):
        self.assertIn("sinks.remote_write.urls", self.agent_keys)
        for name, files in VALUES.items():
            with self.subTest(values=name):
                for key, value in leaves(agent_yml(render(files))).items():
                    self.assertIn(key, self.agent_keys, f"{key} is not a key of the agent's configuration")
                    self.assertIs(type(value), type(self.agent_keys[key]), f"{key}: {value!r}")

    def test_the_agent_runs_with_each_rendered_config_and_args(self):
        # The rendered agent.yml and container args as they are (the args' $(NODE_NAME) expanded as the kubelet
        # does), with the node's paths moved to this machine by flags
        # given after them: the simulator for NVML, this machine's /proc and /sys, a scratch state directory.
        for name, files in VALUES.items():
            with self.subTest(values=name), tempfile.TemporaryDirectory() as tmp:
                docs = render(files)
                config = os.path.join(tmp, "agent.yml")
                with open(config, "w") as f:
                    f.write(find(docs, "ConfigMap")["data"]["agent.yml"])
                args = []
                for arg in agent_container(docs)["args"]:
                    flag = re.match(r"--([a-z0-9.-]+)", arg).group(1)
                    if flag == "config":
                        arg = f"--config={config}"
                    args.append(arg.replace("$(NODE_NAME)", "gpu-node-7"))
                env = dict(os.environ, GPUSCOPE_SIM_SCENARIO=os.path.join(ROOT, "sim", "scenarios",
                                                                          "h100-training.yaml"))
                result = subprocess.run(
                    [AGENT, *args, "--once", "--nvml.library", SIM, "--path.procfs", "/proc", "--path.sysfs", "/sys",
                     "--events.state-dir", tmp, "--web.config.file", "", "--log.level", "warn"],
                    env=env, capture_output=True, text=True, timeout=120)
                self.assertEqual(result.returncode, 0, result.stderr)
                hostname = "hostname" if name == "maximal" else "Hostname"  # dcgmCompat 4.9 in maximal
                self.assertIn(f'{hostname}="gpu-node-7"', result.stdout)
                self.assertIn("DCGM_FI_DEV_GPU_UTIL{", result.stdout)

if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

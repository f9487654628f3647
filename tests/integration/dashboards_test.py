"""Integration: the dashboards' queries on a live Prometheus. A simulated fleet (the demo's: every shipped
scenario, faults included, InfiniBand and host topology from fixture trees on two nodes) plus one agent
running the slurm collector against a real single-node Slurm (a running job, a pending one, the node
draining) is scraped by real Prometheus with the mixin's recording and alerting rules. Then every query of
every committed dashboard (deploy/mixin/generated/dashboards, template variables set to Grafana's "All")
must return data over the run, as Grafana's range queries do (annotations and "in range" panels included),
and so must every query of NVIDIA's dcgm-exporter dashboard (Grafana id 12239,
tests/fixtures/dcgm-dashboard-12239/queries.txt): the drop-in claim. Queries that cannot have data here
are listed in NO_DATA_HERE, each with its reason. Without root or the Slurm packages, the queries of
Slurm metrics are skipped; without a Kubernetes node in the fleet (fleet.kubelets: the pod-resources peer
serving an agent run with --kubernetes, and kube-state-metrics' series), so are the Kubernetes views'
(KUBERNETES_ONLY). The Security view's eBPF and Falco/Tetragon panels (OPTIONAL_SOURCES) must return data
when the fleet has the series they read (an agent run with --ebpf where the kernel lets it load its
programs, Falco's or Tetragon's files); without them they must still run. The DCGM panels (health grid,
profiling source per GPU) and the "Profiling paused" annotation must return data: the demo's A100 nodes use
the stand-in libdcgm.so.4 (gpu-node-07 embedded, per MIG instance; gpu-node-08 through its nv-hostengine,
with a health warning, a failure and a restart), and gpu-node-08 is paused through the agent's profiling
API for a while that ends during the run (PAUSE).

The rules are the committed ones (deploy/mixin/generated/prometheus): the dashboards read recording rules
by name, and the names carry their windows (e.g. account:gpu_allocated_idle_hours:sum_1h), which the fast
variant of the alerting test shrinks.

The demo's Kubernetes node (gpu-node-06) gets its pods from the pod-resources peer (PODRESOURCES, the
kubelet's gRPC API), their uids, owners and teams from the API-server peer (KUBEAPI: with it, the processes
on its shared GPU get their pods, which the per-pod framebuffer panel needs) and the Kubernetes panels
their kube-state-metrics series from the fleet's stand-in.

Usage: dashboards_test.py AGENT SIM_LIBRARY [--podresources PODRESOURCES] [--kubeapi KUBEAPI]"""

import dataclasses
import json
import os
import re
import sys
import time
import unittest
import urllib.error
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import dashboard_queries  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402
import slurm_harness  # noqa: E402

AGENT, SIM = sys.argv[1:3]


def option(name):
    """The value after `name` on the command line; None when it is not given."""
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv[:-1] else None


PODRESOURCES = option("--podresources")
KUBEAPI = option("--kubeapi")
DASHBOARDS = os.path.join(fleet.GENERATED, "dashboards")
DCGM_QUERIES = os.path.join(fleet.ROOT, "tests", "fixtures", "dcgm-dashboard-12239", "queries.txt")

# The demo fleet, its faults brought forward: h100-faults' XIDs and ECC errors within ~25 s, the NVLink CRC
# errors within ~20 s, a100-dcgm's DBE and nv-hostengine restart within ~3 s, the other scenarios' daily
# curves and checkpoints moving. The demo's profiling pause starts with Prometheus' scrapes and lifts by
# itself well before the wait for data below ends (that takes the recording rules' windows).
PAUSE = fleet.ProfilingPause(after=0, seconds=15, reason="ncu on job 4108 (dashboards test)")
NODES = tuple(dataclasses.replace(n, speed=5 if n.scenario == "h100-faults.yaml" else 30,
                                  profiling_pause=PAUSE if n.profiling_pause else None) for n in fleet.DEMO_NODES)
PAUSED = [n.hostname for n in NODES if n.profiling_pause]
# Metrics only the slurm collector (one agent per cluster, talking to slurmctld) or its recording rules make.
SLURM_ONLY = ("gpuscope_slurm_", ":slurm_")
# Series only an agent with --kubernetes (on a node whose pods the kubelet's pod-resources API serves) and
# kube-state-metrics make, or the mixin's Kubernetes rules record from them (lib/kubernetes_rules.libsonnet).
KUBERNETES_ONLY = ("gpuscope_k8s_", "kube_", "namespace_pod", "namespace:", "team:", "namespace_model:",
                   "node_resource:", "cluster_resource:", "node:kube_", "gpu_pod:", 'pod!=""')
# Process series by pod: on the node's shared GPU a process gets its pod only from the uid in its cgroup
# matched to the API server's, so these need the API-server peer too.
POD_UIDS_ONLY = 'gpuscope_gpu_process_memory_bytes{'

# Series only optional sources make: the agent's eBPF programs (--ebpf: root and a kernel that loads them,
# and then only what the node's processes do: connections outside the allow-list, opens of watched
# directories) and Falco or Tetragon (a site's own daemons, read from their files). A query reading them
# must return data when this fleet has every such series it reads (the selector each pattern names), and
# must run either way.
OPTIONAL_SOURCES = (
    (re.compile(r"\b(gpuscope_ebpf_\w+|gpuscope_security_events_total)\b"), None),
    (re.compile(r'gpuscope_events_total\{[^}]*class=~"(falco\|tetragon\|ebpf_\.\*)"'),
     'gpuscope_events_total{class=~"%s"}'),
)


def optional_series(expr):
    """The selectors of the optional sources' series that expr reads."""
    found = set()
    for pattern, selector in OPTIONAL_SOURCES:
        for match in pattern.finditer(expr):
            found.add(selector % match.group(1) if selector else match.group(1))
    return found


# (dashboard title, panel title [refId]) -> why the query has no data on this fleet.
NO_DATA_HERE = {
    ("gpuscope / Slurm jobs", "Fairshare by account [A]"):
        "sshare needs Slurm accounting (slurmdbd + a database); the test cluster runs without it",
}


def dcgm_dashboard_queries():
    """[(panel title, expr)] of queries.txt, $Hostname and $gpu set to All."""
    queries = []
    with open(DCGM_QUERIES) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                title, expr = line.rstrip("\n").split("\t", 1)
                queries.append((title, dashboard_queries.substitute(expr)))
    return queries


def query_range_has_data(prometheus, expr, start, end):
    """True when expr returns at least one sample between start and end (Unix seconds), step 2 s: what a
    Grafana time-series panel or annotation over that range would draw."""
    url = prometheus.url + "/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "2"})
    try:
        body = json.loads(harness.http_get(url, timeout=30)[2])
    except urllib.error.HTTPError as error:
        raise AssertionError(f"query {expr!r} failed: {error.read().decode(errors='replace')}") from None
    if body.get("status") != "success":
        raise AssertionError(f"query {expr!r} failed: {body}")
    return any(series["values"] for series in body["data"]["result"])


class DashboardQueriesReturnData(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.slurm, cls.fleet = None, None
        try:
            cls.queries = dashboard_queries.panel_queries(DASHBOARDS, include_variables=True)
            nodes = NODES
            if slurm_harness.slurm_available():
                cls.slurm = slurm_harness.SlurmCluster().start()
                running = cls.slurm.sbatch("sleep 600", ["--gres=gpu:2"], user="alice", account="physics")
                cls.slurm.wait_for_state(running, "RUNNING")
                cls.slurm.sbatch("sleep 600", ["--gres=gpu:8"], user="alice", account="physics")  # pending
                cls.slurm.run_client(["scontrol", "update", f"NodeName={cls.slurm.node}", "State=DRAIN",
                                      "Reason=dashboard test"])
                # The cluster's one agent with the slurm collector runs on the Slurm node itself.
                nodes += (fleet.Node(cls.slurm.node, "h100-training.yaml", speed=30,
                                     args=("--collector.slurm", "--collector.slurm.interval=2s"),
                                     env=(f"SLURM_CONF={cls.slurm.conf_path}",)),)
            cls.start = time.time()
            cls.fleet = fleet.Fleet(AGENT, SIM, nodes,
                                    rule_files=[os.path.join(fleet.GENERATED, f) for f in fleet.RULE_FILES],
                                    podresources=PODRESOURCES, kubeapi=KUBEAPI, security_node="gpu-node-01")
            cls.prometheus = cls.fleet.prometheus
            # Data arrives over the first tens of seconds (recording rules, rate windows, faults); wait until
            # every query that should have data has had some, or the deadline passes (the tests name the rest).
            try:
                harness.wait_for(lambda: not cls.missing(), 150, "every dashboard query to return data")
            except AssertionError:
                pass
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.fleet:
            cls.fleet.stop()
        if cls.slurm:
            cls.slurm.stop()

    @classmethod
    def kubernetes(cls):
        """Whether the fleet runs a Kubernetes node (its kubelet's pod-resources API and kube-state-metrics)."""
        return bool(getattr(cls.fleet, "kubelets", None))

    @classmethod
    def pod_uids(cls):
        """Whether the Kubernetes node's API server runs (pod uids, which tie processes to their pods)."""
        return bool(getattr(cls.fleet, "api_servers", None))

    @classmethod
    def optional_present(cls, expr):
        """Whether this fleet has every optional source's series that expr reads (true when it reads none)."""
        return all(cls.has_data(selector) for selector in optional_series(expr))

    @classmethod
    def expected(cls):
        """The queries that must have data here: not allowlisted, not Slurm's without a Slurm, not the
        Kubernetes views' without a Kubernetes node, not the processes' pods without its API server, and
        not the optional sources' without their series."""
        return [(d, p, e) for d, p, e in cls.queries
                if (d, p) not in NO_DATA_HERE and (cls.slurm or not any(m in e for m in SLURM_ONLY))
                and (cls.kubernetes() or not any(m in e for m in KUBERNETES_ONLY))
                and (cls.pod_uids() or not (POD_UIDS_ONLY in e and 'pod!=""' in e))
                and cls.optional_present(e)]

    @classmethod
    def has_data(cls, expr):
        return query_range_has_data(cls.prometheus, expr, cls.start, time.time())

    @classmethod
    def missing(cls):
        return [(d, p) for d, p, expr in cls.expected() if not cls.has_data(expr)]

    def test_every_dashboard_query_returns_data(self):
        self.assertGreater(len(self.queries), 0)
        for dashboard, panel, expr in self.expected():
            with self.subTest(dashboard=dashboard, panel=panel):
                self.assertTrue(self.has_data(expr), f"no data: {expr}")
        if not self.slurm:
            self.skipTest("no Slurm here (needs root and the Debian Slurm packages): Slurm queries not run")

    def test_the_dcgm_health_grid_shows_the_warning_and_the_failure_and_the_host_engine_restart(self):
        # a100-dcgm.yaml on gpu-node-08: GPU 2's InfoROM warns from the start, GPU 1's memory fails at its DBE,
        # nv-hostengine restarts and the agent connects again; gpu-node-07's MIG instances get DCGM's fields.
        window = f"{int(time.time() - self.start) + 1}s"
        worst = {(r["metric"]["gpu"], r["metric"]["system"]): float(r["value"][1]) for r in self.prometheus.query(
            f'max_over_time(gpuscope_dcgm_health{{Hostname="gpu-node-08"}}[{window}]) > 0')}
        self.assertEqual(worst, {("1", "memory"): 2, ("2", "inforom"): 1})
        connects = self.prometheus.query(
            f'max_over_time(gpuscope_dcgm_connects_total{{Hostname="gpu-node-08"}}[{window}])')
        self.assertGreaterEqual(float(connects[0]["value"][1]), 2, "no reconnection after nv-hostengine's restart")
        sources = {(r["metric"]["Hostname"], r["metric"]["source"]) for r in self.prometheus.query(
            'count by (Hostname, source) (last_over_time('
            f'gpuscope_gpu_profiling_info{{Hostname=~"gpu-node-0[78]"}}[{window}]))')}
        self.assertEqual(sources, {("gpu-node-07", "dcgm"), ("gpu-node-08", "dcgm")})
        self.assertTrue(self.prometheus.query('DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname="gpu-node-07", GPU_I_ID!=""}'),
                        "no DCGM profiling fields per MIG GPU instance")

    def test_the_profiling_pause_is_annotated_and_lifts_by_itself(self):
        self.assertEqual(PAUSED, ["gpu-node-08"])
        answer = harness.wait_for(lambda: self.fleet.pauses.get("gpu-node-08"), 30, "the agent's answer to the pause")
        self.assertIsInstance(answer, dict, answer)
        self.assertEqual((answer["paused"], answer["dcgm"], answer["reason"]), (True, "paused", PAUSE.reason))
        # The annotation's spans: the node paused, then no longer, without anyone resuming it.
        harness.wait_for(lambda: self.prometheus.query('gpuscope_profiling_paused{Hostname="gpu-node-08"} == 0'),
                         PAUSE.seconds + 30, "the pause to lift by itself")
        annotation = next(e for d, p, e in self.queries if p == "annotation: Profiling paused")
        window = f"{int(time.time() - self.start) + 1}s"
        spans = {r["metric"]["Hostname"] for r in self.prometheus.query(f"max_over_time(({annotation})[{window}:1s])")}
        self.assertEqual(spans, {"gpu-node-08"})
        self.assertFalse(self.prometheus.query(annotation), "an annotation span still open after the pause's end")
        pauses = self.prometheus.query('gpuscope_profiling_pauses_total{Hostname="gpu-node-08"}')
        self.assertEqual(float(pauses[0]["value"][1]), 1)

    def test_queries_of_optional_sources_run(self):
        # Those without their series here are not in expected(): they must still be valid PromQL that
        # Prometheus evaluates (has_data raises on an error).
        optional = [(d, p, e) for d, p, e in self.queries if optional_series(e)]
        self.assertGreater(len(optional), 0)
        for dashboard, panel, expr in optional:
            with self.subTest(dashboard=dashboard, panel=panel):
                self.has_data(expr)

    def test_every_allowlisted_query_exists_and_still_has_no_data(self):
        queries = {(d, p): expr for d, p, expr in self.queries}
        for key, reason in NO_DATA_HERE.items():
            with self.subTest(query=key, reason=reason):
                self.assertIn(key, queries, "allowlist entry for a query the dashboards no longer have")
                self.assertFalse(self.has_data(queries[key]), "has data now: drop it from NO_DATA_HERE")

    def test_dcgm_exporter_dashboard_queries_return_data_from_gpuscope(self):
        queries = dcgm_dashboard_queries()
        self.assertGreater(len(queries), 5)
        for title, expr in queries:
            with self.subTest(panel=title):
                self.assertTrue(self.prometheus.query(expr), f"no data now: {expr}")


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

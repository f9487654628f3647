"""Integration: a real Prometheus (Debian package, loopback) scrapes gpuscope-agent running on the NVML
simulator. Proves the dcgm-exporter drop-in claim through PromQL, and that a GPU fallen off the bus
keeps the other seven GPUs' series flowing.

Usage: prometheus_scrape_test.py AGENT SIM_LIBRARY SCENARIO_DIR"""

import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402

AGENT, SIM, SCENARIOS = sys.argv[1:4]
IDENTITY_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"}


def by_uuid(result):
    return {r["metric"]["UUID"]: float(r["value"][1]) for r in result}


class FrozenTimeScrape(unittest.TestCase):
    """Simulated time frozen: every value is constant, so Prometheus must hold exactly what /metrics says."""

    @classmethod
    def setUpClass(cls):
        cls.agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"),
                                  env={"GPUSCOPE_SIM_TIME": "900"})
        cls.prometheus = harness.Prometheus([f"127.0.0.1:{cls.agent.port}"])
        harness.wait_for(lambda: len(cls.prometheus.query("DCGM_FI_PROF_SM_ACTIVE")) == 8, 60,
                         "eight GPUs with GPM metrics in Prometheus")

    @classmethod
    def tearDownClass(cls):
        cls.prometheus.stop()
        cls.agent.stop()
        cls.agent.cleanup()

    def test_dcgm_exporter_names_return_the_simulated_values(self):
        exposed = harness.parse_exposition(self.agent.metrics())
        for name in ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED",
                     "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK",
                     "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_PROF_SM_ACTIVE"]:
            with self.subTest(metric=name):
                expected = {dict(labels)["UUID"]: value for (n, labels), value in exposed.items() if n == name}
                self.assertEqual(len(expected), 8, f"{name}: /metrics has {len(expected)} GPUs")
                got = by_uuid(self.prometheus.query(name))
                self.assertEqual(got, expected)

    def test_series_carry_dcgm_exporter_identity_labels(self):
        for series in self.prometheus.query("DCGM_FI_DEV_GPU_UTIL"):
            labels = set(series["metric"]) - {"__name__", "instance", "job"}
            self.assertEqual(labels, IDENTITY_LABELS)
            self.assertEqual(series["metric"]["Hostname"], "sim-node")
            self.assertRegex(series["metric"]["device"], r"^nvidia[0-7]$")
            self.assertRegex(series["metric"]["pci_bus_id"], r"^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.0$")

    def test_promql_aggregations_work_on_dcgm_names(self):
        result = self.prometheus.query('avg by (modelName) (DCGM_FI_DEV_GPU_UTIL)')
        self.assertEqual(len(result), 1)
        self.assertEqual(result[0]["metric"]["modelName"], "NVIDIA H100 80GB HBM3")
        power = self.prometheus.query("sum(DCGM_FI_DEV_POWER_USAGE)")
        self.assertGreater(float(power[0]["value"][1]), 8 * 60)  # eight busy GPUs draw more than idle power

    def test_self_metrics_report_a_successful_gpu_collector(self):
        result = self.prometheus.query('gpuscope_collector_success{collector="gpu"}')
        self.assertEqual(float(result[0]["value"][1]), 1.0)
        up = self.prometheus.query("sum(gpuscope_gpu_up)")
        self.assertEqual(float(up[0]["value"][1]), 8.0)


class GpuFallsOffTheBus(unittest.TestCase):
    """GPU 3 falls off the bus 3 s into the run (real time): it turns gpuscope_gpu_up 0, the other seven
    keep reporting fresh samples, and /healthz stays 200 because NVML itself is fine."""

    def setUp(self):
        self.scenario = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        self.scenario.write(
            "seed: 11\n"
            "gpus:\n"
            "  count: 8\n"
            "  model: h100-sxm\n"
            "  workload: {type: training, memory_gib: 60, processes: 1, step_s: 1}\n"
            "faults:\n"
            "  - {type: fall_off_bus, gpu: 3, at: 3}\n")
        self.scenario.close()
        self.agent = harness.Agent(AGENT, SIM, self.scenario.name)
        self.prometheus = harness.Prometheus([f"127.0.0.1:{self.agent.port}"])

    def tearDown(self):
        self.prometheus.stop()
        self.agent.stop()
        self.agent.cleanup()
        os.unlink(self.scenario.name)

    def test_lost_gpu_reports_down_while_the_others_keep_flowing(self):
        harness.wait_for(lambda: self.prometheus.query('gpuscope_gpu_up{gpu="3"} == 0'), 60,
                         "GPU 3 reported down")
        energy_before = by_uuid(self.prometheus.query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"))
        time.sleep(3)
        fresh = self.prometheus.query("DCGM_FI_DEV_GPU_UTIL and (time() - timestamp(DCGM_FI_DEV_GPU_UTIL) < 2.5)")
        self.assertEqual(sorted(s["metric"]["gpu"] for s in fresh), ["0", "1", "2", "4", "5", "6", "7"])
        energy_after = by_uuid(self.prometheus.query(
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION and (time() - timestamp(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) < 2.5)"))
        self.assertEqual(len(energy_after), 7)
        for uuid, value in energy_after.items():
            self.assertGreater(value, energy_before[uuid], "energy of a healthy GPU keeps counting")
        up = {s["metric"]["gpu"]: float(s["value"][1]) for s in self.prometheus.query("gpuscope_gpu_up")}
        self.assertEqual(up, {"0": 1, "1": 1, "2": 1, "3": 0, "4": 1, "5": 1, "6": 1, "7": 1})
        self.assertEqual(harness.http_get(self.agent.url + "/healthz")[0], 200)


class TlsAndBasicAuthScrape(unittest.TestCase):
    """The agent serves /metrics over TLS with a bcrypt basic-auth user from an exporter-toolkit web config;
    real Prometheus scrapes it with the matching scrape config, and a request without credentials gets 401."""

    def test_prometheus_scrapes_over_tls_with_basic_auth(self):
        if not (harness.shutil.which("openssl") and harness.shutil.which("htpasswd")):
            self.skipTest("openssl or htpasswd missing (scripts/install-deps.sh installs them)")
        workdir = tempfile.mkdtemp(prefix="gpuscope-tls-")
        cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
        harness.subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                "-keyout", key, "-out", cert], check=True, capture_output=True)
        hashed = harness.subprocess.run(["htpasswd", "-nbBC", "10", "scraper", "s3cret"], check=True,
                                        capture_output=True, text=True).stdout.strip().split(":", 1)[1]
        web_config = os.path.join(workdir, "web.yml")
        with open(web_config, "w") as f:
            f.write(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
                    f"basic_auth_users:\n  scraper: '{hashed}'\n")
        agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"),
                              extra_args=["--web.config.file", web_config])
        prometheus = None
        try:
            prometheus = harness.Prometheus(
                [f"127.0.0.1:{agent.port}"],
                scrape_extra=("    scheme: https\n"
                              f"    tls_config: {{ca_file: {cert}}}\n"
                              "    basic_auth: {username: scraper, password: s3cret}\n"))
            harness.wait_for(lambda: len(prometheus.query("DCGM_FI_DEV_GPU_UTIL")) == 8, 60,
                             "eight GPUs scraped over TLS with basic auth")
            self.assertEqual(float(prometheus.query('up{job="gpu"}')[0]["value"][1]), 1.0)
            context = harness.ssl.create_default_context(cafile=cert)
            with self.assertRaises(harness.urllib.error.HTTPError) as denied:
                harness.urllib.request.urlopen(f"https://127.0.0.1:{agent.port}/metrics", context=context, timeout=5)
            self.assertEqual(denied.exception.code, 401)
        finally:
            if prometheus:
                prometheus.stop()
            agent.stop()
            agent.cleanup()
            harness.shutil.rmtree(workdir, ignore_errors=True)


class AgentLifecycle(unittest.TestCase):
    def test_sigterm_stops_the_agent_cleanly(self):
        agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"))
        try:
            harness.wait_for(lambda: harness.http_get(agent.url + "/readyz")[0] == 200, 30, "ready")
            self.assertEqual(agent.stop(), 0)
            self.assertIn("stopped", agent.read_log())
        finally:
            agent.stop()
            agent.cleanup()

    def test_healthz_is_unhealthy_when_nvml_cannot_be_loaded(self):
        agent = harness.Agent(AGENT, "/nonexistent/libnvidia-ml.so.1", os.path.join(SCENARIOS, "h100-training.yaml"))
        try:
            harness.wait_for(lambda: harness.http_get(agent.url + "/readyz")[0] == 200, 30, "ready")
            try:
                status = harness.http_get(agent.url + "/healthz")[0]
            except harness.urllib.error.HTTPError as error:
                status = error.code
            self.assertEqual(status, 503)
            self.assertIn("gpuscope_collector_success{collector=\"gpu\"} 0", agent.metrics())
        finally:
            agent.stop()
            agent.cleanup()


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

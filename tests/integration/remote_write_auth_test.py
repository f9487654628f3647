"""Integration: remote_write credentials and TLS against real receivers on loopback, and one agent pushing
to two receivers that take different credentials.

- Prometheus 3 (built from the pinned module) behind an exporter-toolkit --web.config.file: basic auth
  (a bcrypt hash made with htpasswd) with the agent's password file; a wrong password is a 401 that drops
  the batch and counts it, never a retry loop; TLS with client_auth_type RequireAndVerifyClientCert and
  the agent's client certificate (a CA, server and client certificate made with openssl per test).
- VictoriaMetrics with -httpAuth.username/-httpAuth.password: basic auth on a second real receiver.
- vmauth (VictoriaMetrics' auth proxy, built from the same pinned module) in front of VictoriaMetrics:
  a bearer token it checks (a wrong one is a 401 dropped and counted, a rotated right one used at once);
  a route only for X-Scope-OrgID: team-a, so the tenant header demonstrably reached a real receiver.
- sinks.remote_write.endpoints: Prometheus 3 and VictoriaMetrics in one agent, each with its own user.
- An unreadable password file stops the agent at start with a message naming the file.
- No real receiver here shows every header it was sent (the flags' and an endpoint's tenant, token and
  extra headers side by side), so those are also read from our own receiver, in tests named fault_receiver.

Usage: remote_write_auth_test.py AGENT SIM_LIBRARY SCENARIO_DIR PUSH_RECEIVER PROMETHEUS3|none
       VICTORIAMETRICS|none VMAUTH|none [TestClass ...]"""

import base64
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402

AGENT, SIM, SCENARIOS, PUSH_RECEIVER = sys.argv[1:5]
# The peers built from pinned modules; "none" when not built (then Debian's VictoriaMetrics).
PROMETHEUS3, VICTORIAMETRICS, VMAUTH = [None if path == "none" else path for path in sys.argv[5:8]]
SCENARIO = os.path.join(SCENARIOS, "h100-training.yaml")
FROZEN = {"GPUSCOPE_SIM_TIME": "900"}
RECEIVER_ARGS = ["--web.enable-remote-write-receiver"]
NO_SCRAPE = "global: {scrape_interval: 1m}\nscrape_configs: []\n"


def run(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


class Workdir:
    """A temporary directory with the test's secrets and certificates."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="gpuscope-rw-auth-")

    def file(self, name, content):
        path = os.path.join(self.path, name)
        with open(path, "w") as f:
            f.write(content)
        return path

    def bcrypt(self, user, password):
        """user: hash line for basic_auth_users, as Prometheus' documentation makes it (htpasswd -B)."""
        return run("htpasswd", "-nbBC", "10", user, password).strip().split(":", 1)[1]

    def certificates(self):
        return harness.make_certificates(self.path)

    def cleanup(self):
        shutil.rmtree(self.path, ignore_errors=True)


def start_agent(state_dir, args):
    return harness.Agent(AGENT, SIM, SCENARIO, env=FROZEN,
                         extra_args=["--sink.remote-write.interval", "1s", "--events.state-dir", state_dir, *args])


def eight_gpus(receiver):
    harness.wait_for(lambda: len(receiver.query("DCGM_FI_DEV_GPU_TEMP")) == 8, 30, "eight GPUs pushed")


class AgentCase(unittest.TestCase):
    def setUp(self):
        self.work = Workdir()
        self.state_dir = os.path.join(self.work.path, "agent-state")
        self.agent = None
        self.receivers = []

    def tearDown(self):
        failed = harness.failed(self)
        if self.agent is not None:
            self.agent.finish(show_log=failed)
        for receiver in self.receivers:
            receiver.stop()
        self.work.cleanup()


@unittest.skipUnless(PROMETHEUS3 and os.access(PROMETHEUS3, os.X_OK),
                     "no Prometheus 3 binary (scripts/build-peers.sh builds it)")
class Prometheus3BasicAuth(AgentCase):
    def setUp(self):
        super().setUp()
        web = self.work.file("web.yml", f"basic_auth_users:\n  gpuscope: '{self.work.bcrypt('gpuscope', 'right')}'\n")
        self.prometheus = harness.Prometheus([], binary=PROMETHEUS3, config=NO_SCRAPE,
                                             extra_args=RECEIVER_ARGS + [f"--web.config.file={web}"],
                                             headers=basic("gpuscope", "right"))
        self.receivers.append(self.prometheus)

    def push_with_password(self, password):
        self.agent = start_agent(self.state_dir, [
            "--sink.remote-write.url", self.prometheus.url + "/api/v1/write",
            "--sink.remote-write.basic-auth.username", "gpuscope",
            "--sink.remote-write.basic-auth.password-file", self.work.file("password", password + "\n")])

    def test_basic_auth_with_a_password_file_is_accepted(self):
        self.push_with_password("right")
        eight_gpus(self.prometheus)
        self.assertEqual(harness.metric(self.agent, "gpuscope_remote_write_samples_dropped_total") or 0, 0)

    def test_a_wrong_password_is_a_401_that_drops_and_counts_the_batch_without_retrying(self):
        self.push_with_password("wrong")
        sink = "remote_write_0"
        harness.wait_for(lambda: (harness.metric(self.agent, "gpuscope_sink_requests_total", sink=sink, code="401")
                                  or 0) >= 3, 30, "three requests answered 401")
        families = harness.parse_exposition(self.agent.metrics())

        def total(name, **labels):
            return sum(v for (n, ls), v in families.items() if n == name and labels.items() <= dict(ls).items())
        refused = total("gpuscope_sink_requests_total", sink=sink, code="401")
        # Each 401 gave its batch up: dropped records keep pace with the refused requests (one batch per
        # request, or several when a backlog is sent together), and nothing waits for a retry.
        self.assertGreaterEqual(total("gpuscope_sink_dropped_records_total", sink=sink, reason="rejected"), refused)
        self.assertGreater(total("gpuscope_remote_write_samples_dropped_total"), 0)
        self.assertEqual(total("gpuscope_remote_write_samples_retried_total"), 0)
        self.assertEqual(total("gpuscope_sink_retry_backoff_seconds", sink=sink), 0)
        self.assertEqual(total("gpuscope_sink_requests_total", sink=sink, code="204"), 0)
        self.assertEqual(self.prometheus.query("DCGM_FI_DEV_GPU_TEMP"), [])


@unittest.skipUnless(PROMETHEUS3 and os.access(PROMETHEUS3, os.X_OK),
                     "no Prometheus 3 binary (scripts/build-peers.sh builds it)")
class Prometheus3ClientCertificate(AgentCase):
    def test_tls_with_a_client_certificate_that_prometheus_requires(self):
        certs = self.work.certificates()
        web = self.work.file("web.yml", (
            "tls_server_config:\n"
            f"  cert_file: {certs['server_cert']}\n  key_file: {certs['server_key']}\n"
            f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {certs['ca']}\n"))
        context = ssl.create_default_context(cafile=certs["ca"])
        context.load_cert_chain(certs["client_cert"], certs["client_key"])
        prometheus = harness.Prometheus([], binary=PROMETHEUS3, config=NO_SCRAPE,
                                        extra_args=RECEIVER_ARGS + [f"--web.config.file={web}"], context=context)
        self.receivers.append(prometheus)
        # Without a client certificate Prometheus ends the handshake: the requirement is real.
        with self.assertRaises(OSError):
            harness.http_get(prometheus.url + "/-/ready", context=ssl.create_default_context(cafile=certs["ca"]))
        self.agent = start_agent(self.state_dir, [
            "--sink.remote-write.url", prometheus.url + "/api/v1/write", "--sink.tls.ca-file", certs["ca"],
            "--sink.remote-write.tls.cert-file", certs["client_cert"],
            "--sink.remote-write.tls.key-file", certs["client_key"]])
        eight_gpus(prometheus)


class VictoriaMetricsBasicAuth(AgentCase):
    def test_basic_auth_on_victoriametrics(self):
        vm = harness.VictoriaMetrics(binary=VICTORIAMETRICS,
                                     extra_args=["-httpAuth.username=vmuser", "-httpAuth.password=vm-secret"],
                                     headers=basic("vmuser", "vm-secret"))
        self.receivers.append(vm)
        with self.assertRaises(harness.urllib.error.HTTPError) as denied:  # the receiver does check
            harness.http_get(vm.url + "/api/v1/query?query=up")
        self.assertEqual(denied.exception.code, 401)
        self.agent = start_agent(self.state_dir, [
            "--sink.remote-write.url", vm.url + "/api/v1/write", "--sink.remote-write.basic-auth.username", "vmuser",
            "--sink.remote-write.basic-auth.password-file", self.work.file("vm-password", "vm-secret\n")])
        eight_gpus(vm)


@unittest.skipUnless(VMAUTH and os.access(VMAUTH, os.X_OK), "no vmauth binary (scripts/build-peers.sh builds it)")
class Vmauth(AgentCase):
    """vmauth in front of VictoriaMetrics: it checks bearer tokens and routes on request headers."""

    def start_vmauth(self, config_text):
        """vmauth on a free port with `config_text` (its url_prefix: {vm}); returns (vmauth URL, VictoriaMetrics)."""
        vm = harness.VictoriaMetrics(binary=VICTORIAMETRICS)
        self.receivers.append(vm)
        port = harness.free_port()
        config = self.work.file("vmauth.yml", config_text.format(vm=vm.url))
        log = open(os.path.join(self.work.path, "vmauth.log"), "w")
        process = subprocess.Popen([VMAUTH, f"-auth.config={config}", f"-httpListenAddr=127.0.0.1:{port}"],
                                   stdout=log, stderr=subprocess.STDOUT)

        class Running:
            def stop(self_inner):
                process.terminate()
                process.wait(timeout=15)
                log.close()
        self.receivers.append(Running())
        url = f"http://127.0.0.1:{port}"
        harness.wait_for(lambda: harness.http_get(url + "/health")[0] == 200, 30, "vmauth to listen")
        return url, vm

    def test_vmauth_checks_the_bearer_token_a_wrong_one_is_dropped_a_rotated_one_used_at_once(self):
        url, vm = self.start_vmauth("users:\n  - bearer_token: rw-token\n    url_prefix: {vm}\n")
        with self.assertRaises(harness.urllib.error.HTTPError) as denied:  # vmauth does check
            harness.http_get(url + "/api/v1/query?query=up", {"Authorization": "Bearer wrong"})
        self.assertEqual(denied.exception.code, 401)
        token = self.work.file("token", "wrong\n")
        self.agent = start_agent(self.state_dir, ["--sink.remote-write.url", url + "/api/v1/write",
                                                  "--sink.remote-write.bearer-token-file", token])
        sink = "remote_write_0"
        harness.wait_for(lambda: (harness.metric(self.agent, "gpuscope_sink_requests_total", sink=sink, code="401")
                                  or 0) >= 2, 30, "two requests refused with 401")
        self.assertGreater(harness.metric(self.agent, "gpuscope_remote_write_samples_dropped_total"), 0)
        self.assertEqual(vm.query("DCGM_FI_DEV_GPU_TEMP"), [])
        os.rename(self.work.file("token.new", "rw-token\n"), token)  # rotated: the next request reads it
        eight_gpus(vm)

    def test_vmauth_routes_on_the_tenant_header_so_it_reached_the_receiver(self):
        # Only pushes carrying X-Scope-OrgID: team-a have a route to VictoriaMetrics.
        url, vm = self.start_vmauth("unauthorized_user:\n  url_map:\n    - src_paths: ['/api/v1/write']\n"
                                    "      src_headers: ['X-Scope-OrgID: team-a']\n      url_prefix: {vm}\n")
        self.agent = start_agent(self.state_dir, ["--sink.remote-write.url", url + "/api/v1/write",
                                                  "--sink.remote-write.tenant", "team-a"])
        eight_gpus(vm)
        self.agent.finish()
        self.agent = start_agent(os.path.join(self.work.path, "other-state"), [
            "--sink.remote-write.url", url + "/api/v1/write", "--sink.remote-write.tenant", "team-b"])
        harness.wait_for(lambda: harness.metric(self.agent, "gpuscope_remote_write_samples_dropped_total"), 30,
                         "team-b's pushes refused (no route)")
        self.assertEqual(harness.metric(self.agent, "gpuscope_remote_write_samples_sent_total") or 0, 0)


@unittest.skipUnless(PROMETHEUS3 and os.access(PROMETHEUS3, os.X_OK),
                     "no Prometheus 3 binary (scripts/build-peers.sh builds it)")
class TwoReceiversWithTheirOwnCredentials(AgentCase):
    """The site's case: a Mimir-like receiver for tenant team-a and a Grafana-Cloud-like one with its own
    basic auth user, in one agent, from sinks.remote_write.endpoints."""

    def test_each_endpoint_gets_its_own_credentials(self):
        web = self.work.file("web.yml", f"basic_auth_users:\n  team-a: '{self.work.bcrypt('team-a', 'pa')}'\n")
        prometheus = harness.Prometheus([], binary=PROMETHEUS3, config=NO_SCRAPE,
                                        extra_args=RECEIVER_ARGS + [f"--web.config.file={web}"],
                                        headers=basic("team-a", "pa"))
        self.receivers.append(prometheus)
        vm = harness.VictoriaMetrics(binary=VICTORIAMETRICS,
                                     extra_args=["-httpAuth.username=12345", "-httpAuth.password=pv"],
                                     headers=basic("12345", "pv"))
        self.receivers.append(vm)
        config = self.work.file("agent.yml", (
            "sinks:\n  remote_write:\n    endpoints:\n"
            f"      - url: {prometheus.url}/api/v1/write\n        protocol: '2.0'\n        tenant: team-a\n"
            f"        basic_auth: {{username: team-a, password_file: {self.work.file('pa', 'pa')}}}\n"
            f"      - url: {vm.url}/api/v1/write\n"
            f"        basic_auth: {{username: '12345', password_file: {self.work.file('pv', 'pv')}}}\n"))
        self.agent = start_agent(self.state_dir, ["--config", config])
        eight_gpus(prometheus)
        eight_gpus(vm)
        self.assertEqual(harness.metric(self.agent, "gpuscope_remote_write_protocol", url=prometheus.url +
                                        "/api/v1/write", protocol="2.0"), 1)
        self.assertEqual(harness.metric(self.agent, "gpuscope_remote_write_samples_dropped_total") or 0, 0)


class FaultReceiverSeesTenantAndTokens(AgentCase):
    """Our own receiver records the headers of every metrics push, which no real receiver here shows."""

    def test_fault_receiver_sees_each_urls_tenant_and_bearer_token(self):
        receiver = harness.FaultReceiver(PUSH_RECEIVER, self.work.path)
        self.receivers.append(receiver)
        base = receiver.url("/api/v1/write")
        config = self.work.file("agent.yml", (
            "sinks:\n  remote_write:\n    endpoints:\n"
            f"      - url: {base}?via=endpoint\n        tenant: team-b\n"
            f"        bearer_token_file: {self.work.file('endpoint-token', 'tok-endpoint')}\n"
            "        headers: [X-Site=lab]\n"))
        self.agent = start_agent(self.state_dir, [
            "--config", config, "--sink.remote-write.url", base + "?via=flag", "--sink.remote-write.tenant", "team-a",
            "--sink.remote-write.bearer-token-file", self.work.file("flag-token", "tok-flag\n")])

        def both():
            seen = {p["target"].split("via=")[1]: p["headers"] for p in receiver.entries()}
            return seen if {"flag", "endpoint"} <= seen.keys() else None
        seen = harness.wait_for(both, 30, "a push to each URL")
        self.assertEqual(seen["flag"]["x-scope-orgid"], "team-a")
        self.assertEqual(seen["flag"]["authorization"], "Bearer tok-flag")
        self.assertNotIn("x-site", seen["flag"])
        self.assertEqual(seen["endpoint"]["x-scope-orgid"], "team-b")
        self.assertEqual(seen["endpoint"]["authorization"], "Bearer tok-endpoint")
        self.assertEqual(seen["endpoint"]["x-site"], "lab")


class StartUpErrors(unittest.TestCase):
    def test_an_unreadable_password_file_stops_the_agent_at_start_naming_the_file(self):
        work = Workdir()
        try:
            missing = os.path.join(work.path, "no-such-password")
            config = work.file("agent.yml", (
                "sinks:\n  remote_write:\n    endpoints:\n      - url: http://127.0.0.1:9/api/v1/write\n"
                f"        basic_auth: {{username: u, password_file: {missing}}}\n"))
            done = subprocess.run(
                [AGENT, "--nvml.library", SIM, "--web.listen-address", "127.0.0.1:0", "--config", config,
                 "--events.state-dir", os.path.join(work.path, "state")],
                env=dict(os.environ, GPUSCOPE_SIM_SCENARIO=SCENARIO), capture_output=True, text=True, timeout=60)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("cannot read the password file " + missing, done.stdout + done.stderr)
            config = work.file("bad.yml", "sinks:\n  remote_write:\n    endpoints:\n      - tenant: a\n")
            done = subprocess.run([AGENT, "--config", config], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("sinks.remote_write.endpoints[0]: url is required", done.stdout + done.stderr)
        finally:
            work.cleanup()


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[8:])

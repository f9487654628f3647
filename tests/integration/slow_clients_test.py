"""Integration: slow clients cannot deny a scrape. 2,000 connections that each send half a request head
and stop (and reconnect as soon as the agent closes them) are held against the agent while a real
Prometheus, started once the attack is under way, scrapes it every second; not one scrape may fail. Runs over plain HTTP, and over TLS with
connections that stop half-way through their TLS hello. The agent keeps its default --web.max-connections
(64), so the attack is 30 times the cap.

Usage: slow_clients_test.py AGENT SIM_LIBRARY SCENARIO_DIR
Environment: GPUSCOPE_SLOW_CLIENTS (default 2000), GPUSCOPE_SLOW_SECONDS (attack length, default 40 over
plain HTTP; TLS runs half as long)."""

import os
import multiprocessing
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402

AGENT, SIM, SCENARIOS = sys.argv[1:4]
CLIENTS = int(os.environ.get("GPUSCOPE_SLOW_CLIENTS", "2000"))
SECONDS = int(os.environ.get("GPUSCOPE_SLOW_SECONDS", "40"))

# Half of the request head Prometheus sends: no blank line, so the head never completes.
HALF_HTTP_HEAD = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow/1.0\r\nAccept: text/pl"
# The first bytes of a TLS 1.2+ ClientHello record: the record header announces 512 bytes, 11 arrive.
HALF_TLS_HELLO = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])


class SlowClients:
    """`count` sockets to 127.0.0.1:port, each sending `first_bytes` once connected and then nothing. A
    socket the server closes (or answers) is reopened at once. Runs in a process of its own, so that the
    scrapers of the test do not wait for it (Python runs one thread at a time)."""

    def __init__(self, port, count, first_bytes):
        self.port, self.count, self.first_bytes = port, count, first_bytes
        self._connects = multiprocessing.Value("q", 0)  # connections made and bytes sent, reconnections included
        self._closed = multiprocessing.Value("q", 0)    # closed by the server
        self._stop = multiprocessing.Event()
        self._process = multiprocessing.Process(target=self._run, daemon=True)

    @property
    def connects(self):
        return self._connects.value

    @property
    def closed_by_server(self):
        return self._closed.value

    def start(self):
        self._process.start()

    def stop(self):
        self._stop.set()
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    def _run(self):
        selector = selectors.DefaultSelector()

        def open_one():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", self.port))
            selector.register(s, selectors.EVENT_WRITE, "connecting")

        def reopen(s):
            selector.unregister(s)
            s.close()
            open_one()

        for _ in range(self.count):
            open_one()
        connects = closed = 0
        while not self._stop.is_set():
            for key, _ in selector.select(timeout=0.1):
                s = key.fileobj
                if key.data == "connecting":
                    if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                        reopen(s)
                        continue
                    try:
                        s.send(self.first_bytes)
                    except OSError:
                        reopen(s)
                        continue
                    connects += 1
                    selector.modify(s, selectors.EVENT_READ, "held")
                else:
                    try:
                        data = s.recv(4096)
                    except OSError:
                        data = b""
                    if not data:  # closed by the server; anything it sent (a 503) is read first
                        closed += 1
                        reopen(s)
            self._connects.value, self._closed.value = connects, closed
        for key in list(selector.get_map().values()):
            key.fileobj.close()


class FreshScrapes:
    """GET /metrics on a new connection every half second (urllib never reuses one), as a scraper that has
    just started or lost its connection would; records the failures."""

    def __init__(self, url, context=None):
        self.url, self.context = url, context
        self.attempts, self.failures = 0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while not self._stop.wait(0.5):
            self.attempts += 1
            try:
                with harness.urllib.request.urlopen(self.url, timeout=5, context=self.context) as response:
                    if response.status != 200 or b"DCGM_FI_DEV_GPU_UTIL" not in response.read():
                        self.failures.append(f"status {response.status}")
            except Exception as exc:  # noqa: BLE001 - every failure is reported by the test
                self.failures.append(repr(exc))


def raise_descriptor_limit(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed <= hard or (soft < needed and hard == resource.RLIM_INFINITY):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        raise unittest.SkipTest(f"needs {needed} file descriptors, the hard limit allows {soft}")


def metric_value(prometheus, promql, at):
    result = prometheus.query(promql, at=at)
    return float(result[0]["value"][1]) if result else 0.0


class ScrapesSurviveSlowClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise_descriptor_limit(CLIENTS + 256)

    def run_attack(self, first_bytes, seconds, agent_args=(), scrape_extra="", scheme="http", context=None):
        agent = harness.Agent(AGENT, SIM, os.path.join(SCENARIOS, "h100-training.yaml"), extra_args=agent_args)
        prometheus = clients = fresh = None
        try:
            # The attack comes first, so that every scrape needs a new connection to a saturated agent
            # (a scraper already connected keeps its keep-alive connection, even on the old server).
            clients = SlowClients(agent.port, CLIENTS, first_bytes)
            clients.start()
            harness.wait_for(lambda: clients.connects >= CLIENTS, 30, f"{CLIENTS} slow connections")
            closed_before = clients.closed_by_server
            prometheus = harness.Prometheus([f"127.0.0.1:{agent.port}"], scrape_extra=scrape_extra)
            harness.wait_for(lambda: prometheus.query('up{job="gpu"}'), 30, "a first scrape, failed or not")
            fresh = FreshScrapes(f"{scheme}://127.0.0.1:{agent.port}/metrics", context)
            fresh.start()
            started = time.time()
            time.sleep(seconds)
            ended, closed = time.time(), clients.closed_by_server - closed_before
            fresh.stop()
            # Every scrape Prometheus made in the window: up is 1 for a success, 0 for a failure.
            window = f"{int(ended - started)}s"
            scrapes = metric_value(prometheus, f'count_over_time(up{{job="gpu"}}[{window}])', ended)
            successes = metric_value(prometheus, f'sum_over_time(up{{job="gpu"}}[{window}])', ended)
            slowest = metric_value(prometheus, f'max_over_time(scrape_duration_seconds{{job="gpu"}}[{window}])',
                                   ended)
            evicted = metric_value(prometheus, 'sum(gpuscope_http_connections_evicted_total{state="header"})',
                                   ended)
            print(f"\n{CLIENTS} slow clients for {window}: {int(successes)}/{int(scrapes)} scrapes succeeded, "
                  f"slowest {slowest:.3f} s; the agent closed {closed} slow connections in the window "
                  f"({closed / (ended - started):.0f}/s, each reopened at once) and counts {int(evicted)} "
                  f"header evictions since start (as of its last scrape); scrapes on a new connection: "
                  f"{fresh.attempts - len(fresh.failures)}/{fresh.attempts} succeeded {fresh.failures}",
                  flush=True)
            self.assertGreaterEqual(scrapes, 0.8 * (ended - started), "Prometheus kept scraping every second")
            self.assertEqual(successes, scrapes, "no scrape failed")
            self.assertGreaterEqual(fresh.attempts, seconds)
            # A new connection can still be lost now and then under a 6,000-11,000/s reconnect flood (its
            # client's request not yet written when every other held connection is a flood client that
            # has not written either). Runs of 2026-12-02 after the limiter stopped scanning only the 16
            # oldest connections and the server started looking at silent ones for waiting bytes: plain
            # HTTP 0 of 152, TLS 1 of 69 (before: 0-2 of 38-78 and 2-9 of 20-39). Bounded with room for a
            # busier machine; Prometheus's own scrapes (above) must all succeed.
            bound = fresh.attempts // 20 if scheme == "http" else fresh.attempts // 8
            self.assertLessEqual(len(fresh.failures), bound,
                                 f"new {scheme} connections mostly succeed: {fresh.failures}")
            # The attack was real: all the while, slow connections kept the agent at its cap (it had to
            # close each of them at least once on average, and reports it evicted them).
            self.assertGreaterEqual(closed, CLIENTS)
            self.assertGreater(evicted, 0)
        finally:
            if fresh:
                fresh.stop()
            if clients:
                clients.stop()
            if prometheus:
                prometheus.stop()
            agent.stop()
            agent.cleanup()

    def test_no_scrape_fails_while_slow_clients_hold_connections(self):
        self.run_attack(HALF_HTTP_HEAD, SECONDS)

    def test_no_scrape_fails_over_tls_while_slow_clients_stop_mid_handshake(self):
        if not shutil.which("openssl"):
            self.skipTest("openssl missing (scripts/install-deps.sh installs it)")
        workdir = tempfile.mkdtemp(prefix="gpuscope-slow-tls-")
        try:
            cert, key = os.path.join(workdir, "cert.pem"), os.path.join(workdir, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", key, "-out", cert], check=True, capture_output=True)
            web_config = os.path.join(workdir, "web.yml")
            with open(web_config, "w") as f:
                f.write(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n")
            self.run_attack(HALF_TLS_HELLO, max(SECONDS // 2, 10), agent_args=["--web.config.file", web_config],
                            scrape_extra=f"    scheme: https\n    tls_config: {{ca_file: {cert}}}\n",
                            scheme="https", context=harness.ssl.create_default_context(cafile=cert))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

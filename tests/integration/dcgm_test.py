"""Integration: the agent's optional DCGM backend (docs/design/dcgm.md) end to end with real processes: the
built agent on the NVML stand-in and the DCGM stand-in libdcgm.so.4 (sim/dcgm/, driven by the same
scenario), the `gpuscope` CLI, a real VictoriaLogs receiving the events (Loki push) and a real Prometheus
scraping the agent. Proves:
- on 4x A100 training under nv-hostengine (sim/scenarios/a100-dcgm.yaml, --dcgm.mode hostengine) the
  profiling fields DCGM_FI_PROF_GR_ENGINE_ACTIVE, _PIPE_TENSOR_ACTIVE and _DRAM_ACTIVE on every GPU, with
  dcgm-exporter's label set and a training workload's values, from source dcgm, and Prometheus consumes
  them;
- without DCGM the same node reports none of them and no gpuscope_dcgm_* series, logs once that DCGM is
  not installed, and with --dcgm on reports gpuscope_dcgm_up 0;
- `gpuscope profile-pause` / `profile-status` / `profile-resume` with a bearer token file: the profiling
  fields go while paused and come back, a wrong token changes nothing, the pause and resume reach
  VictoriaLogs as events;
- in sped-up simulated time, DCGM's health watches (a double-bit error on GPU 1, GPU 2's corrupt
  InfoROM) as series, counters counted once and dcgm_health events in VictoriaLogs, and nv-hostengine's
  restart: gpuscope_dcgm_up 0 and no profiling values while it is away, a second connection after it;
- MIG (sim/scenarios/a100-mig.yaml, --dcgm.mode embedded): per GPU instance series labelled with
  GPU_I_PROFILE and GPU_I_ID as dcgm-exporter labels them.

Usage: dcgm_test.py AGENT NVML_SIM DCGM_SIM GPUSCOPE_CLI VICTORIA_LOGS REPO_ROOT [PROMETHEUS|none]"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import harness  # noqa: E402
from harness import metric  # noqa: E402
import peers  # noqa: E402

AGENT, NVML_SIM, DCGM_SIM, CLI, VICTORIA_LOGS, ROOT, PROMETHEUS = sys.argv[1:8]
SCENARIOS = os.path.join(ROOT, "sim", "scenarios")
DCGM_SCENARIO = os.path.join(SCENARIOS, "a100-dcgm.yaml")
MIG_SCENARIO = os.path.join(SCENARIOS, "a100-mig.yaml")

GPUS = ("0", "1", "2", "3")
CHECKED_FIELDS = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE")
# DCGM_FI_PROF_PCIE_TX/RX_BYTES have a second source: without a profiling source (no DCGM, DCGM away, a
# pause) they come from NVML's PCIe throughput counters, which need no performance counters
# (docs/design/dcgm.md, "Which source"). Every other DCGM_FI_PROF_* field comes from DCGM on an A100.
NVML_PCIE_FIELDS = ("DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES")
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # moves every GPU cycle
MIG_INSTANCES = {("3g.40gb", "1"), ("2g.20gb", "5"), ("1g.10gb", "13"), ("1g.10gb", "14")}  # a100-mig.yaml
# Simulated seconds per real second for the health and restart case: the DBE at 60 s is seen by a health
# check (every 10 s of real time) well before nv-hostengine stops at 90 s, and after the stop the agent's
# first reconnection (one second later) still falls inside the 10 s window, so the agent waits its retry
# interval (5 s) and the outage shows for seconds.
HEALTH_SPEED = "4"


def families(agent):
    """The agent's /metrics as {family: {frozenset(label items): value}}."""
    return harness.exposition_families(agent.metrics())


def series(fams, name):
    """[(labels dict, value)] of a family; empty when absent."""
    return [(dict(labels), value) for labels, value in fams.get(name, {}).items()]


def by_gpu(fams, name):
    """{gpu: (labels, value)} of a family's whole-GPU series (no MIG instance)."""
    out = {}
    for labels, value in series(fams, name):
        if not labels.get("GPU_I_ID"):
            out[labels["gpu"]] = (labels, value)
    return out


def value(fams, name, **match):
    """The one series of `name` whose labels include `match`; None when there is none."""
    found = [v for labels, v in series(fams, name) if all(labels.get(k) == w for k, w in match.items())]
    if len(found) > 1:
        raise AssertionError(f"{len(found)} series of {name} match {match}")
    return found[0] if found else None


def profiler_fields(fams):
    """The DCGM_FI_PROF_* families present that only a profiling source (DCGM here) can fill."""
    return sorted(n for n in fams if n.startswith("DCGM_FI_PROF_") and n not in NVML_PCIE_FIELDS)


def has_profiling(fams, gpus=GPUS):
    return all(set(by_gpu(fams, name)) >= set(gpus) for name in CHECKED_FIELDS)


def stream_labels(entry):
    """An entry's stream labels, from its _stream (fields of the same names may be structured metadata)."""
    return dict(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', entry["_stream"]))


def wait_for_scrape(agent, predicate, timeout, what):
    """The agent's first /metrics (as families()) for which `predicate` holds."""
    return harness.wait_for(lambda: (lambda f: f if predicate(f) else None)(families(agent)), timeout, what)


def run_cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)


class DcgmBackend(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="gpuscope-dcgm-test-")
        self.agents = []
        self.receiver = None
        self.prometheus = None

    def tearDown(self):
        failed = harness.failed(self)
        for agent in self.agents:
            agent.finish(show_log=failed)
        if self.prometheus is not None:
            self.prometheus.stop()
        if self.receiver is not None:
            if failed:
                print(f"--- victoria-logs log ---\n{self.receiver.read_log()[-4000:]}", file=sys.stderr)
            self.receiver.cleanup()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def start_agent(self, scenario, *args, speed=None, events=False):
        """The agent on `scenario`; with `events`, an event path (an empty --events.file, which the gpu
        source needs to join) shipping everything to a VictoriaLogs of this test."""
        extra = ["--no-collector.host", "--no-collector.infiniband", "--no-collector.textfile", *args]
        if events:
            self.receiver = peers.VictoriaLogs(VICTORIA_LOGS)
            empty = os.path.join(self.workdir, f"events-{len(self.agents)}.log")
            open(empty, "w").close()
            extra += ["--events.file", empty, "--events.state-dir", os.path.join(self.workdir, "state"),
                      "--events.poll-interval", "100ms", "--sink.loki.url", self.receiver.loki_push_url()]
        env = {"GPUSCOPE_SIM_KERNEL_LOG": ""}
        if speed is not None:
            env["GPUSCOPE_SIM_SPEED"] = speed
        agent = harness.Agent(AGENT, NVML_SIM, scenario, extra_args=extra, env=env)
        self.agents.append(agent)
        return agent

    def wait_for_profiling(self, agent, what, timeout=60):
        return wait_for_scrape(agent, has_profiling, timeout, what)

    def shipped(self, agent, count, what):
        """Every entry in VictoriaLogs once the agent's queue is empty and it shipped at least `count`."""
        def stored():
            if metric(agent, "gpuscope_queue_records", queue="events", consumer="loki") != 0:
                return None
            if (metric(agent, "gpuscope_events_shipped_total") or 0) < count:
                return None
            entries = self.receiver.query("*")
            return entries if len(entries) >= count else None
        return harness.wait_for(stored, 60, what)

    # 1 -------------------------------------------------------------------------------------------------
    def test_a100_training_under_hostengine_has_profiling_fields_with_dcgm_exporter_labels(self):
        agent = self.start_agent(DCGM_SCENARIO, "--dcgm.library", DCGM_SIM, "--dcgm.mode", "hostengine")
        fams = self.wait_for_profiling(agent, "the profiling fields of all 4 GPUs from nv-hostengine")

        self.assertEqual(value(fams, "gpuscope_dcgm_up", mode="hostengine"), 1)
        self.assertEqual(len(series(fams, "gpuscope_dcgm_up")), 1, "one node-wide series")
        self.assertEqual(value(fams, "gpuscope_dcgm_connects_total"), 1)
        temperature = by_gpu(fams, "DCGM_FI_DEV_GPU_TEMP")
        self.assertEqual(sorted(temperature), list(GPUS))
        for name in CHECKED_FIELDS:
            got = by_gpu(fams, name)
            self.assertEqual(sorted(got), list(GPUS), name)
            self.assertEqual(len(series(fams, name)), 4, f"{name}: one series per GPU, no MIG instances")
            for gpu, (labels, _) in got.items():
                # dcgm-exporter's label set: DCGM_FI_DEV_GPU_TEMP's labels, and GPU_I_PROFILE/GPU_I_ID empty
                # (dcgm-exporter leaves them out on a GPU without MIG; an empty label is the same thing).
                instance = {k: labels.pop(k) for k in ("GPU_I_PROFILE", "GPU_I_ID") if k in labels}
                self.assertEqual(set(instance.values()) - {""}, set(), f"{name} gpu {gpu}: {instance}")
                self.assertEqual(labels, temperature[gpu][0], f"{name} gpu {gpu}")
        for gpu in GPUS:
            gr = by_gpu(fams, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")[gpu][1]
            tensor = by_gpu(fams, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")[gpu][1]
            dram = by_gpu(fams, "DCGM_FI_PROF_DRAM_ACTIVE")[gpu][1]
            self.assertTrue(0.3 < gr <= 1, f"gpu {gpu}: graphics engine active {gr} while training")
            self.assertTrue(0 < tensor <= gr, f"gpu {gpu}: tensor {tensor} vs graphics engine {gr}")
            self.assertTrue(0 < dram <= 1, f"gpu {gpu}: DRAM active {dram}")
            self.assertEqual(value(fams, "gpuscope_gpu_profiling_info", gpu=gpu), 1)
            self.assertEqual(value(fams, "gpuscope_gpu_profiling_info", gpu=gpu, source="dcgm"), 1,
                             f"gpu {gpu}: an A100 has no GPM, so its source is DCGM")

        if PROMETHEUS == "none":
            print("no Prometheus: the exposition is not scraped by one", file=sys.stderr)
            return
        self.prometheus = harness.Prometheus([f"127.0.0.1:{agent.port}"], binary=PROMETHEUS)

        def scraped():
            count = self.prometheus.query("count(DCGM_FI_PROF_GR_ENGINE_ACTIVE)")
            average = self.prometheus.query("avg(DCGM_FI_PROF_GR_ENGINE_ACTIVE)")
            if not count or float(count[0]["value"][1]) != 4 or not average:
                return None
            return float(average[0]["value"][1])
        average = harness.wait_for(scraped, 60, "Prometheus to hold all 4 GPUs' DCGM_FI_PROF_GR_ENGINE_ACTIVE")
        self.assertTrue(0.3 < average <= 1, average)
        up = self.prometheus.query('gpuscope_dcgm_up{mode="hostengine"}')
        self.assertEqual([float(r["value"][1]) for r in up], [1.0])

    # 2 -------------------------------------------------------------------------------------------------
    def test_without_dcgm_nothing_of_it_is_reported_and_on_reports_it_down(self):
        auto = self.start_agent(DCGM_SCENARIO, "--dcgm.library", "/nonexistent/libdcgm.so.4")
        on = self.start_agent(DCGM_SCENARIO, "--dcgm", "on", "--dcgm.library", "/nonexistent/libdcgm.so.4")
        for agent in (auto, on):
            harness.wait_for(lambda: "DCGM is not installed" in agent.read_log(), 30, "the not-installed line")
            # Two more GPU cycles after the backend gave up (the energy counter moves every cycle).
            first = wait_for_scrape(agent, lambda f: len(by_gpu(f, ENERGY)) == 4, 30, "the GPUs' first cycle")
            energy = by_gpu(first, ENERGY)["0"][1]
            fams = wait_for_scrape(agent, lambda f: by_gpu(f, ENERGY)["0"][1] > energy, 30, "a later cycle")

            for name in CHECKED_FIELDS:
                self.assertNotIn(name, fams)
            self.assertEqual(profiler_fields(fams), [], "no profiling source without DCGM on an A100")
            self.assertNotIn("gpuscope_gpu_profiling_info", fams)
            for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE",
                         "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_PCIE_TX_BYTES"):
                self.assertEqual(sorted(by_gpu(fams, name)), list(GPUS), f"{name} from NVML")
            self.assertGreater(by_gpu(fams, "DCGM_FI_DEV_GPU_UTIL")["0"][1], 30, "the training workload")
            log = agent.read_log()
            self.assertEqual(log.count("DCGM is not installed"), 1, log)
            self.assertNotIn("DCGM connected", log)

        dcgm_series = sorted(n for n in families(auto) if n.startswith("gpuscope_dcgm_"))
        self.assertEqual(dcgm_series, [], "auto without a library: no gpuscope_dcgm_* series at all")
        fams = families(on)
        self.assertEqual([v for _, v in series(fams, "gpuscope_dcgm_up")], [0])
        self.assertEqual(value(fams, "gpuscope_dcgm_connects_total"), 0)
        self.assertNotIn("gpuscope_dcgm_health", fams)

    # 3 -------------------------------------------------------------------------------------------------
    def test_profile_pause_and_resume_through_the_cli_with_a_token(self):
        token = os.path.join(self.workdir, "profiling.token")
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"s3cr3t-profiling-token\n")
        os.close(fd)
        wrong = os.path.join(self.workdir, "wrong.token")
        fd = os.open(wrong, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"not-the-token\n")
        os.close(fd)
        agent = self.start_agent(DCGM_SCENARIO, "--dcgm.library", DCGM_SIM, "--dcgm.mode", "hostengine",
                                 "--profiling.token-file", token, events=True)
        self.wait_for_profiling(agent, "the profiling fields before the pause")
        url = ["--agent.url", agent.url]

        refused = run_cli("profile-pause", "--for", "10m", "--reason", "ncu on job 4101", *url,
                          "--agent.token-file", wrong)
        self.assertEqual(refused.returncode, 1, refused)
        self.assertIn("401", refused.stderr)
        fams = families(agent)
        self.assertEqual(value(fams, "gpuscope_profiling_paused"), 0, "a wrong token pauses nothing")
        self.assertEqual(value(fams, "gpuscope_profiling_pauses_total"), 0)
        self.assertTrue(has_profiling(fams))

        before = time.time()
        paused = run_cli("profile-pause", "--for", "10m", "--reason", "ncu on job 4101", *url,
                         "--agent.token-file", token)
        self.assertEqual(paused.returncode, 0, paused)
        self.assertIn("DCGM: paused", paused.stdout)
        self.assertIn("(10m)", paused.stdout)

        fams = wait_for_scrape(
            agent, lambda f: value(f, "gpuscope_profiling_paused") == 1 and not profiler_fields(f), 30,
            "the profiling fields gone while paused")
        self.assertNotIn("gpuscope_gpu_profiling_info", fams)
        expiry = value(fams, "gpuscope_profiling_pause_expiry_timestamp_seconds")
        self.assertTrue(before + 590 <= expiry <= time.time() + 610, (before, expiry))
        self.assertEqual(value(fams, "gpuscope_profiling_pauses_total"), 1)
        self.assertEqual(value(fams, "gpuscope_dcgm_up", mode="hostengine"), 1, "paused, still connected")
        # Every other GPU metric goes on: the energy counters keep moving while no profiling field shows.
        energy = {g: v for g, (_, v) in by_gpu(fams, ENERGY).items()}
        self.assertEqual(sorted(energy), list(GPUS))

        while_paused = []

        def moved():
            f = families(agent)
            while_paused.append(profiler_fields(f))
            return all(by_gpu(f, ENERGY)[g][1] > energy[g] for g in GPUS) and by_gpu(f, "DCGM_FI_DEV_GPU_TEMP")
        harness.wait_for(moved, 30, "the other GPU metrics to go on while paused")
        self.assertEqual(while_paused, [[]] * len(while_paused), "no profiling field while paused")

        status = run_cli("profile-status", *url, "--format", "json")
        self.assertEqual(status.returncode, 0, status)
        state = json.loads(status.stdout)
        self.assertEqual((state["paused"], state["reason"], state["dcgm"], state["pauses_total"]),
                         (True, "ncu on job 4101", "paused", 1), state)
        text = run_cli("profile-status", *url)
        self.assertEqual(text.returncode, 0, text)
        self.assertIn(": paused until", text.stdout)
        self.assertIn("reason: ncu on job 4101", text.stdout)

        refused = run_cli("profile-resume", *url, "--agent.token-file", wrong)
        self.assertEqual(refused.returncode, 1, refused)
        self.assertIn("401", refused.stderr)
        fams = families(agent)
        self.assertEqual(value(fams, "gpuscope_profiling_paused"), 1, "a wrong token resumes nothing")
        self.assertEqual(profiler_fields(fams), [])
        self.assertTrue(json.loads(run_cli("profile-status", *url, "--format", "json").stdout)["paused"])

        resumed = run_cli("profile-resume", *url, "--agent.token-file", token)
        self.assertEqual(resumed.returncode, 0, resumed)
        self.assertIn("DCGM: resumed", resumed.stdout)
        fams = self.wait_for_profiling(agent, "the profiling fields back after the resume")
        self.assertEqual(value(fams, "gpuscope_profiling_paused"), 0)
        self.assertEqual(value(fams, "gpuscope_profiling_pause_expiry_timestamp_seconds"), 0)
        self.assertEqual(value(fams, "gpuscope_profiling_pauses_total"), 1)
        self.assertEqual(value(fams, "gpuscope_gpu_profiling_info", gpu="0", source="dcgm"), 1)

        # Three events: the pause, the resume, and GPU 2's InfoROM warning (the scenario's, from the start).
        entries = self.shipped(agent, 3, "the pause and the resume in VictoriaLogs")
        by_class = {}
        for entry in entries:
            by_class.setdefault(stream_labels(entry)["class"], []).append(entry)
        self.assertEqual(sorted(by_class), ["dcgm_health", "profiling_paused", "profiling_resumed"], entries)
        self.assertEqual([e["system"] for e in by_class["dcgm_health"]], ["inforom"])
        (pause,), (resume,) = by_class["profiling_paused"], by_class["profiling_resumed"]
        self.assertEqual(pause["reason"], "ncu on job 4101")
        self.assertLessEqual(abs(float(pause["until_unix"]) - expiry), 1, (pause["until_unix"], expiry))
        self.assertIn("ncu on job 4101", pause["_msg"])
        self.assertEqual(resume["expired"], "false")
        for entry in (pause, resume):
            self.assertEqual((stream_labels(entry)["source"], stream_labels(entry)["severity"]), ("gpu", "info"))

    # 4 -------------------------------------------------------------------------------------------------
    def test_health_incidents_and_a_hostengine_restart_in_sped_up_time(self):
        agent = self.start_agent(DCGM_SCENARIO, "--dcgm.library", DCGM_SIM, "--dcgm.mode", "hostengine",
                                 speed=HEALTH_SPEED, events=True)
        fams = self.wait_for_profiling(agent, "the profiling fields from nv-hostengine")
        uuid = {gpu: labels["UUID"] for gpu, (labels, _) in by_gpu(fams, "DCGM_FI_DEV_GPU_TEMP").items()}

        # From here every scrape is summed up: GPU 1's memory health from pass to fail at the DBE (60 s
        # simulated), nv-hostengine away (90-100 s) and back. Only the order is waited for, never a time:
        # under load the DBE may first be seen by the restarted host engine.
        seen = []

        def observe():
            f = families(agent)
            seen.append({
                "up": value(f, "gpuscope_dcgm_up", mode="hostengine"),
                "connects": value(f, "gpuscope_dcgm_connects_total"),
                "memory": value(f, "gpuscope_dcgm_health", gpu="1", system="memory"),
                "profiler_fields": profiler_fields(f),
                "profiling_info": "gpuscope_gpu_profiling_info" in f,
                "nvml_gpus": sorted(by_gpu(f, "DCGM_FI_DEV_GPU_TEMP")),
            })
            return f

        def restarted():
            f = observe()
            done = (value(f, "gpuscope_dcgm_connects_total") == 2 and has_profiling(f) and
                    value(f, "gpuscope_dcgm_up", mode="hostengine") == 1 and
                    value(f, "gpuscope_dcgm_health", gpu="1", system="memory") == 2)
            return f if done else None
        fams = harness.wait_for(restarted, 120, "the DBE's memory failure and DCGM back after nv-hostengine's restart")

        results = [s["memory"] for s in seen if s["memory"] is not None]
        self.assertEqual(results[0], 0, "GPU 1's memory passes before the double-bit error")
        self.assertEqual(results[results.index(2):], [2] * (len(results) - results.index(2)), "fails from then on")
        self.assertEqual(set(results), {0, 2})
        # While nv-hostengine is away: no connection and no profiling value, not even a stale one; NVML goes on.
        outage = [s for s in seen if s["up"] == 0]
        self.assertTrue(outage, "gpuscope_dcgm_up 0 while nv-hostengine is down")
        for s in outage:
            self.assertEqual(s["profiler_fields"], [], "no profiling value while DCGM is away")
            self.assertFalse(s["profiling_info"])
            self.assertEqual(s["nvml_gpus"], list(GPUS), "NVML goes on")
        self.assertEqual([s["connects"] for s in outage], [1] * len(outage))
        self.assertEqual(value(fams, "gpuscope_dcgm_connects_total"), 2)
        self.assertIn("lost the connection to nv-hostengine", agent.read_log())
        for gpu in GPUS:
            self.assertEqual(value(fams, "gpuscope_gpu_profiling_info", gpu=gpu, source="dcgm"), 1, gpu)
            self.assertEqual(value(fams, "gpuscope_dcgm_health", gpu=gpu, system="pcie"), 0, gpu)
        self.assertEqual(value(fams, "gpuscope_dcgm_health", gpu="0", system="memory"), 0)
        self.assertEqual(value(fams, "gpuscope_dcgm_health", gpu="1", system="inforom"), 0)

        # The restarted host engine's checks (the first one at the connection) report the same two
        # incidents: each still counted once.
        self.assertEqual(value(fams, "gpuscope_dcgm_health", gpu="2", system="inforom"), 1)
        counts = {(labels["gpu"], labels["system"], labels["result"]): v
                  for labels, v in series(fams, "gpuscope_dcgm_health_incidents_total") if v}
        self.assertEqual(counts, {("1", "memory", "fail"): 1, ("2", "inforom", "warn"): 1})

        entries = self.shipped(agent, 2, "the dcgm_health events in VictoriaLogs")
        health = [e for e in entries if stream_labels(e)["class"] == "dcgm_health"]
        self.assertEqual(len(health), 2, health)
        (memory,) = [e for e in health if e["system"] == "memory"]
        # Tied to its GPU by UUID, as the XID events are: gpu and UUID as fields.
        self.assertEqual((memory["UUID"], memory["gpu"], memory["result"]), (uuid["1"], "1", "fail"))
        self.assertNotEqual(int(memory["code"]), 0)
        # DCGM's message: in the line, and alone in `detail` (the stand-in's text for a volatile DBE,
        # naming the GPU as DCGM's messages do).
        self.assertIn(uuid["1"], memory["_msg"])
        self.assertIn("double-bit ECC error(s) in GPU 1", memory["_msg"])
        self.assertIn("double-bit ECC error(s) in GPU 1", memory["detail"])
        self.assertEqual((stream_labels(memory)["severity"], stream_labels(memory)["source"]), ("critical", "gpu"))
        (inforom,) = [e for e in health if e["system"] == "inforom"]
        self.assertEqual((inforom["UUID"], inforom["gpu"], inforom["result"]), (uuid["2"], "2", "warn"))
        self.assertEqual(stream_labels(inforom)["severity"], "warning")
        self.assertIn("corrupt InfoROM", inforom["_msg"])

    # 5 -------------------------------------------------------------------------------------------------
    def test_mig_gpu_instances_get_their_own_profiling_series(self):
        agent = self.start_agent(MIG_SCENARIO, "--dcgm.library", DCGM_SIM, "--dcgm.mode", "embedded")

        def instances(f):
            got = {}
            for labels, v in series(f, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
                if labels.get("GPU_I_ID"):
                    got[(labels["gpu"], labels["GPU_I_PROFILE"], labels["GPU_I_ID"])] = (labels, v)
            return got

        fams = wait_for_scrape(agent, lambda f: len(instances(f)) == 8 and has_profiling(f), 60,
                               "the profiling fields of the 8 GPU instances")
        self.assertEqual(value(fams, "gpuscope_dcgm_up", mode="embedded"), 1)
        got = instances(fams)
        self.assertEqual(set(got), {(gpu, p, i) for gpu in ("0", "1") for p, i in MIG_INSTANCES},
                         "GPUs 0 and 1 are partitioned, 2 and 3 are not")
        memory = {(l["gpu"], l["GPU_I_PROFILE"], l["GPU_I_ID"]): l
                  for l, _ in series(fams, "DCGM_FI_DEV_FB_USED") if l.get("GPU_I_ID")}
        for key, (labels, v) in got.items():
            # dcgm-exporter labels a GPU instance's series alike whatever the field: the same labels as the
            # instance's frame buffer series (from NVML).
            self.assertEqual(labels, memory[key], key)
            self.assertTrue(0 <= v <= 1, (key, v))
        for gpu in ("0", "1"):
            busy = got[(gpu, "3g.40gb", "1")][1]
            self.assertGreater(busy, 0, f"gpu {gpu}'s 3g.40gb instance serves inference")
            self.assertEqual(got[(gpu, "1g.10gb", "14")][1], 0, f"gpu {gpu}'s unused instance (load 0)")
            # The 1g.10gb instance 13 sees 60 % of the workload (load 0.6) over the same interval.
            self.assertAlmostEqual(got[(gpu, "1g.10gb", "13")][1], 0.6 * busy, delta=1e-9)
        for gpu in ("2", "3"):
            self.assertGreater(by_gpu(fams, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")[gpu][1], 0, f"whole-GPU gpu {gpu}")
        for labels, _ in series(fams, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
            if labels["gpu"] in ("2", "3"):
                self.assertEqual(labels.get("GPU_I_ID", ""), "", labels)


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1] + sys.argv[8:])

"""Integration: `gpuscope inventory` against real Prometheus.

History: four days of synthetic samples with known answers, written as OpenMetrics and backfilled with
`promtool tsdb create-blocks-from openmetrics` into a Prometheus that scrapes nothing. Two GPUs a node:
  gpu-node-01: two cards all along; the node is down for an hour at day 1.5; GPU 1's hpc_job label changes
               every six hours; GPU 0 has one double-bit ECC error (under the RMA threshold of two).
  gpu-node-02: GPU 0 is the bad card: 1 DBE at 10 h, 2 more at 12 h (an RMA candidate), XID 79 at 20 h
               (read from the kernel log: no UUID, only its PCI bus id), gone at 20 h; a new card in its slot
               at day 1. GPU 1 is a card that moves to gpu-node-03 GPU 1 at day 2 + 2 h.
  gpu-node-03: GPU 0 has a row-remap failure from day 3 + 2 h (an RMA candidate in place); GPU 1 is
               replaced by the moved card at day 2 + 2 h.
  gpu-node-04: appears at day 3, with the bad card back from RMA in GPU 0 (its DBE counter reset to 0, then
               one more error at day 3 + 5 h) and a new card in GPU 1.
The report (table, CSV and JSON) must say exactly that, the same at a resolution that needs one range query
per series and at one that needs several chunks; --node and --rma-only filter; bad flags exit 2.

Live: two demo nodes (gpu-node-01 healthy, gpu-node-03 the faults scenario, whose GPU 1 falls off the bus)
scraped by Prometheus: today's GPUs appear with the serials their agents export, and the fallen card is an
RMA candidate for XID 79.

Usage: cli_inventory_test.py AGENT SIM_LIBRARY GPUSCOPE PROMTOOL"""

import csv
import io
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402
import fleet  # noqa: E402
import harness  # noqa: E402

AGENT, SIM, GPUSCOPE, PROMTOOL = sys.argv[1:5]

H = 3600
D = 86400
SAMPLE = 120  # seconds between synthetic samples (the scrape interval of the made-up fleet)
# The history starts at a whole hour four days and two hours ago (inside Prometheus' retention, before its head).
T0 = (int(time.time()) // H) * H - 4 * D - 2 * H
END = T0 + 4 * D
MODEL = "NVIDIA H100 80GB HBM3"


def uuid(n):
    return f"GPU-{n:08x}-7a1c-4e2b-9c3d-{n:012x}"


class Card:
    def __init__(self, n, serial):
        self.uuid = uuid(n)
        self.serial = serial


GOOD_0101 = Card(0x101, "1654321000101")
GOOD_0102 = Card(0x102, "1654321000102")
BAD = Card(0x201, "1654321000201")
NEW_0201 = Card(0x299, "1654321000299")
MOVER = Card(0x202, "1654321000202")
REMAP = Card(0x301, "1654321000301")
OLD_0302 = Card(0x302, "1654321000302")
NEW_0402 = Card(0x402, "1654321000402")

# (card, node, gpu, pci_bus_id, first sample, last sample) — first and last on whole 10 minutes from T0.
STAYS = [
    (GOOD_0101, "gpu-node-01", "0", "00000000:18:00.0", 0, 4 * D),
    (GOOD_0102, "gpu-node-01", "1", "00000000:2A:00.0", 0, 4 * D),
    (BAD, "gpu-node-02", "0", "00000000:18:00.0", 0, 20 * H),
    (NEW_0201, "gpu-node-02", "0", "00000000:18:00.0", D, 4 * D),
    (MOVER, "gpu-node-02", "1", "00000000:2A:00.0", 0, 2 * D),
    (MOVER, "gpu-node-03", "1", "00000000:2A:00.0", 2 * D + 2 * H, 4 * D),
    (REMAP, "gpu-node-03", "0", "00000000:18:00.0", 0, 4 * D),
    (OLD_0302, "gpu-node-03", "1", "00000000:2A:00.0", 0, 2 * D),
    (BAD, "gpu-node-04", "0", "00000000:3B:00.0", 3 * D, 4 * D),
    (NEW_0402, "gpu-node-04", "1", "00000000:4C:00.0", 3 * D, 4 * D),
]
NODE_01_DOWN = (int(1.5 * D), int(1.5 * D) + H)  # no samples of gpu-node-01 in [from, to)

# Double-bit ECC counter steps: (card, node, at, new value) — the counter holds its value until the next.
DBE_STEPS = {
    (GOOD_0101.uuid, "gpu-node-01"): [(D, 1)],
    (BAD.uuid, "gpu-node-02"): [(10 * H, 1), (12 * H, 3)],
    (BAD.uuid, "gpu-node-04"): [(3 * D + 5 * H, 1)],
}
REMAP_FAILURE_FROM = 3 * D + 2 * H
XID79_AT = 20 * H


def ts(offset):
    return T0 + offset


def times(first, last, node):
    t = first
    while t <= last:
        if not (node == "gpu-node-01" and NODE_01_DOWN[0] <= t < NODE_01_DOWN[1]):
            yield t
        t += SAMPLE


def labels(**kv):
    return "{" + ",".join(f'{k}="{v}"' for k, v in kv.items() if v is not None) + "}"


def openmetrics():
    """The synthetic history as OpenMetrics text, one family at a time, each series in time order."""
    out = []
    out.append("# TYPE gpuscope_gpu_info gauge")
    for card, node, gpu, pci, first, last in STAYS:
        for t in times(first, last, node):
            job = str(5000 + t // (6 * H)) if card is GOOD_0102 else "4100"
            out.append("gpuscope_gpu_info" + labels(
                gpu=gpu, UUID=card.uuid, pci_bus_id=pci, device=f"nvidia{gpu}", modelName=MODEL, Hostname=node,
                DCGM_FI_DRIVER_VERSION="550.54.15", serial=card.serial, nvml_version="12.550.54.15",
                mig_mode="0", hpc_job=job) + f" 1 {ts(t)}")
    out.append("# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL gauge")
    for card, node, gpu, pci, first, last in STAYS:
        steps = DBE_STEPS.get((card.uuid, node), [])
        for t in times(first, last, node):
            value = max([v for at, v in steps if at <= t], default=0)
            out.append("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" + labels(
                gpu=gpu, UUID=card.uuid, pci_bus_id=pci, device=f"nvidia{gpu}", modelName=MODEL, Hostname=node,
                DCGM_FI_DRIVER_VERSION="550.54.15", hpc_job="4100") + f" {value} {ts(t)}")
    out.append("# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge")
    for card, node, gpu, pci, first, last in STAYS:
        for t in times(first, last, node):
            value = 1 if card is REMAP and t >= REMAP_FAILURE_FROM else 0
            out.append("DCGM_FI_DEV_ROW_REMAP_FAILURE" + labels(
                gpu=gpu, UUID=card.uuid, pci_bus_id=pci, device=f"nvidia{gpu}", modelName=MODEL, Hostname=node,
                DCGM_FI_DRIVER_VERSION="550.54.15", hpc_job="4100") + f" {value} {ts(t)}")
    # XID 79 read from the kernel log after the card left NVML: no UUID, no gpu, its PCI bus id. Exported
    # until the node goes down for the repair, 12 minutes before the new card appears (day 1).
    out.append("# TYPE gpuscope_xid_errors_total gauge")
    for t in times(XID79_AT, D - 6 * SAMPLE, "gpu-node-02"):
        out.append("gpuscope_xid_errors_total" + labels(
            pci_bus_id="00000000:18:00.0", Hostname="gpu-node-02", xid="79", action="reset_gpu") + f" 1 {ts(t)}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


def iso(offset):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts(offset)))


# What the report must say.
EXPECTED_EVENTS = [
    (iso(12 * H), "rma-candidate", "gpu-node-02", "0", BAD.uuid),
    (iso(D), "replaced", "gpu-node-02", "0", NEW_0201.uuid),
    (iso(2 * D + 2 * H), "replaced", "gpu-node-03", "1", MOVER.uuid),
    (iso(2 * D + 2 * H), "moved", "gpu-node-03", "1", MOVER.uuid),
    (iso(3 * D), "returned", "gpu-node-04", "0", BAD.uuid),
    (iso(3 * D + 2 * H), "rma-candidate", "gpu-node-03", "0", REMAP.uuid),
]
EXPECTED_RMA = [
    {"serial": BAD.serial, "uuid": BAD.uuid, "model": MODEL, "node": "gpu-node-02", "gpu": "0",
     "flagged_at": iso(12 * H), "reasons": "3 double-bit ECC errors; XID 79 (fallen off the bus)",
     "dbe": 4, "remap_failures": 0, "xid79": 1, "returned_at": iso(3 * D), "returned_to": "gpu-node-04/0",
     "dbe_since_return": 1, "remap_failures_since_return": 0, "xid79_since_return": 0},
    {"serial": REMAP.serial, "uuid": REMAP.uuid, "model": MODEL, "node": "gpu-node-03", "gpu": "0",
     "flagged_at": iso(3 * D + 2 * H), "reasons": "row-remap failure", "dbe": 0, "remap_failures": 1, "xid79": 0,
     "returned_at": "", "returned_to": "", "dbe_since_return": None, "remap_failures_since_return": None,
     "xid79_since_return": None},
]


def expected_gpus():
    rows = []
    for card, node, gpu, pci, first, last in STAYS:
        rma = ""
        if card is BAD:
            rma = "candidate" if node == "gpu-node-02" else "returned"
        elif card is REMAP:
            rma = "candidate"
        rows.append({"serial": card.serial, "uuid": card.uuid, "model": MODEL, "node": node, "gpu": gpu,
                     "first_seen": iso(first), "last_seen": iso(last),
                     "status": "present" if last == 4 * D else "gone", "rma": rma})
    return sorted(rows, key=lambda r: (r["serial"], r["uuid"], r["first_seen"]))


def cell(value):
    """A JSON cell as the CSV writes it."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def gpuscope(url, *args):
    return subprocess.run([GPUSCOPE, "inventory", f"--prometheus.url={url}", *args],
                          capture_output=True, text=True, timeout=300)


def report(url, *args):
    done = gpuscope(url, *args)
    if done.returncode != 0:
        raise AssertionError(f"gpuscope inventory {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


class InventoryOverBackfilledHistory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prometheus = harness.Prometheus([], openmetrics=openmetrics(), promtool=PROMTOOL)
        cls.range = [f"--from={ts(0)}", f"--to={iso(4 * D)}"]

    @classmethod
    def tearDownClass(cls):
        cls.prometheus.stop()

    def json_report(self, *args):
        return json.loads(report(self.prometheus.url, *self.range, "--format=json", *args))

    def events(self, doc):
        return [(e["time"], e["event"], e["node"], e["gpu"], e["uuid"]) for e in doc["events"]]

    def test_json_says_where_each_card_was_and_what_happened(self):
        doc = self.json_report("--resolution=600")  # 577 steps: one query per series
        self.assertEqual(doc["from"], iso(0))
        self.assertEqual(doc["to"], iso(4 * D))
        self.assertEqual(doc["step_seconds"], 600)
        self.assertEqual(doc["gpus"], expected_gpus())
        self.assertEqual(self.events(doc), EXPECTED_EVENTS)
        self.assertEqual(doc["rma"], EXPECTED_RMA)
        details = {(e["event"], e["uuid"]): e["detail"] for e in doc["events"]}
        self.assertEqual(details[("replaced", NEW_0201.uuid)],
                         f"slot gpu-node-02/0: {BAD.uuid} replaced by {NEW_0201.uuid}")
        self.assertEqual(details[("moved", MOVER.uuid)],
                         f"{MOVER.uuid} (serial {MOVER.serial}) moved from gpu-node-02/1 to gpu-node-03/1")
        self.assertEqual(details[("returned", BAD.uuid)],
                         f"RMA candidate {BAD.uuid} (serial {BAD.serial}) (left gpu-node-02/0) is back in "
                         "gpu-node-04/0; since then: 1 double-bit ECC error")

    def test_chunked_queries_at_a_finer_resolution_find_the_same_events(self):
        # 5,761 steps of 60 s: three chunks of at most 2,000 per series.
        doc = self.json_report("--resolution=60")
        self.assertEqual(self.events(doc), EXPECTED_EVENTS)
        self.assertEqual(doc["rma"], EXPECTED_RMA)
        self.assertEqual([(g["uuid"], g["node"], g["first_seen"]) for g in doc["gpus"]],
                         [(g["uuid"], g["node"], g["first_seen"]) for g in expected_gpus()])

    def test_csv_sections_match_the_json(self):
        doc = self.json_report("--resolution=600")
        for section in ("gpus", "events", "rma"):
            rows = list(csv.DictReader(io.StringIO(report(self.prometheus.url, *self.range, "--resolution=600",
                                                          "--format=csv", f"--section={section}"))))
            as_text = [{k: cell(v) for k, v in row.items()} for row in doc[section]]
            self.assertEqual(rows, as_text, section)

    def test_table_tells_the_story_in_words(self):
        text = report(self.prometheus.url, *self.range, "--resolution=600")
        self.assertTrue(text.startswith(f"GPU inventory from {iso(0)} to {iso(4 * D)}, sampled every 600 s\n"))
        self.assertIn(f"slot gpu-node-02/0: {BAD.uuid} replaced by {NEW_0201.uuid}", text)
        self.assertIn(f"slot gpu-node-03/1: {OLD_0302.uuid} replaced by {MOVER.uuid}", text)
        self.assertIn("is an RMA candidate: 3 double-bit ECC errors, XID 79 (fallen off the bus)", text)

    def test_node_filter_keeps_the_history_of_cards_that_were_there(self):
        doc = self.json_report("--resolution=600", "--node=gpu-node-04")
        self.assertEqual(sorted({g["uuid"] for g in doc["gpus"]}), sorted([BAD.uuid, NEW_0402.uuid]))
        self.assertEqual([g["node"] for g in doc["gpus"] if g["uuid"] == BAD.uuid], ["gpu-node-02", "gpu-node-04"])
        self.assertEqual([r["uuid"] for r in doc["rma"]], [BAD.uuid])

    def test_rma_only_lists_the_candidates_and_their_slots_events(self):
        doc = self.json_report("--resolution=600", "--rma-only")
        self.assertEqual(sorted({g["uuid"] for g in doc["gpus"]}), sorted([BAD.uuid, REMAP.uuid]))
        self.assertEqual(self.events(doc), [e for e in EXPECTED_EVENTS if e[4] != MOVER.uuid])

    def test_bad_flags_exit_2_with_a_reason_and_an_empty_range_exits_1(self):
        for args, reason in ((["--format=xml"], "--format"), (["--from=yesterday"], "--from"),
                             (["--node=gpu-node-0["], "--node"), (["--from=2026-01-02", "--to=2026-01-01"], "before"),
                             (["--resolution=0"], "--resolution"), (["extra"], "no arguments")):
            done = gpuscope(self.prometheus.url, *args)
            self.assertEqual(done.returncode, 2, args)
            self.assertIn(reason, done.stderr)
            self.assertEqual(done.stdout, "")
        done = gpuscope(self.prometheus.url, "--from=2020-01-01", "--to=2020-01-02")
        self.assertEqual(done.returncode, 1)
        self.assertIn("no gpuscope_gpu_info", done.stderr)
        done = gpuscope("http://127.0.0.1:1", "--lookback=600")
        self.assertEqual(done.returncode, 1)


class InventoryOfALiveFleet(unittest.TestCase):
    def test_todays_gpus_appear_with_their_serials_and_the_fallen_card_is_a_candidate(self):
        nodes = tuple(n for n in fleet.DEMO_NODES if n.hostname in ("gpu-node-01", "gpu-node-03"))
        live = fleet.Fleet(AGENT, SIM, nodes)
        try:
            prometheus = live.prometheus

            def fallen():
                return prometheus.query('gpuscope_xid_errors_total{xid="79"} > 0')

            harness.wait_for(fallen, 180, "gpu-node-03's XID 79 in Prometheus")
            doc = json.loads(report(prometheus.url, "--lookback=900", "--format=json"))
            info = prometheus.query("gpuscope_gpu_info")
            exported = sorted((r["metric"]["UUID"], r["metric"]["serial"], r["metric"]["Hostname"], r["metric"]["gpu"])
                              for r in info)
            self.assertEqual(len([e for e in exported if e[2] == "gpu-node-01"]), 8)
            self.assertTrue(all(serial for _, serial, _, _ in exported))
            present = sorted((g["uuid"], g["serial"], g["node"], g["gpu"])
                             for g in doc["gpus"] if g["status"] == "present")
            self.assertEqual(present, exported)
            self.assertEqual([e["event"] for e in doc["events"] if e["event"] in ("replaced", "moved")], [])
            lost = fallen()[0]["metric"]
            self.assertEqual(lost["Hostname"], "gpu-node-03")
            rows = {r["uuid"]: r for r in doc["rma"]}
            lost_uuid = lost.get("UUID") or next(u for u, _, h, g in exported if h == "gpu-node-03" and g == "1")
            self.assertIn(lost_uuid, rows)
            self.assertIn("XID 79 (fallen off the bus)", rows[lost_uuid]["reasons"])
            self.assertEqual(rows[lost_uuid]["xid79"], 1)
        finally:
            live.stop()


if __name__ == "__main__":
    unittest_main.main(sys.argv[:1])

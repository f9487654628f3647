"""Component: docs/cardinality.md's generated tables are what the agent exposes today.

bench/cardinality.py runs the built agent on the simulator for each case of the document (plain training,
MIG, many processes per GPU, a Slurm job, Kubernetes with the kubelet stand-in, the host and InfiniBand
collectors, the event path and the endpoint) at 8 and 72 GPUs and renders the per-feature counts, the
knobs and the fleet budget; the document's generated block must be exactly that. A new metric family, a
new label value or a collector that starts emitting more series per GPU fails here until the document is
regenerated (`bench/cardinality.py AGENT SIM ROOT --podresources BIN --write docs/cardinality.md`) and the
prose around it reviewed.

Usage: cardinality_test.py AGENT SIM_LIBRARY ROOT PODRESOURCES_BIN"""

import os
import sys
import unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

AGENT, SIM, ROOT, PODRESOURCES = sys.argv[1:5]
sys.path.insert(0, os.path.join(ROOT, "bench"))
import cardinality  # noqa: E402

DOC = os.path.join(ROOT, "docs", "cardinality.md")


class CardinalityDoc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tables = cardinality.measure(AGENT, SIM, ROOT, PODRESOURCES)
        with open(DOC) as f:
            cls.doc = f.read()

    def test_the_documented_counts_are_the_agents(self):
        diff = cardinality.stale(DOC, self.doc, self.tables)
        self.assertEqual(diff, "", "docs/cardinality.md is stale: rerun bench/cardinality.py --write "
                                   "docs/cardinality.md and review the diff:\n" + diff)

    def test_every_case_is_measured_at_both_sizes_with_nonzero_gpu_series(self):
        for case in ("training", "mig", "processes", "slurm", "kubernetes"):
            with self.subTest(case=case):
                row = next(line for line in self.tables.splitlines() if line.startswith(f"| {case} | **total**"))
                small, large = (int(cell.strip(" *")) for cell in row.split("|")[3:5])
                self.assertGreater(small, 0)
                # The count follows the node's size: every added GPU brings its own GPU series (well over
                # a hundred on any model), so the 64 GPUs between the sizes cannot be a fixed count.
                self.assertGreaterEqual(large - small, 64 * 100)

    def test_a_changed_count_is_reported_stale(self):
        measured = cardinality.replace_block(self.doc, self.tables)
        row = next(line for line in self.tables.splitlines() if line.startswith("| training | **total**"))
        edited = measured.replace(row, row.replace("| **", "| **1", 1))
        self.assertNotEqual(edited, measured)
        self.assertIn("+" + row, cardinality.stale(DOC, edited, self.tables))
        self.assertEqual(cardinality.stale(DOC, measured, self.tables), "")


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

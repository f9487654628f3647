"""Golden exposition files: gpuscope-agent --once on each shipped scenario at fixed simulated times
(GPUSCOPE_SIM_TIME), compared byte for byte with tests/golden/<scenario>@<seconds>.prom, and linted
with `promtool check metrics`. The only promtool findings allowed are those dcgm-exporter's own names
cause (counters without _total, non-base units), listed one by one in tests/golden/promtool-allowed.txt.

Usage: golden_test.py AGENT SIM_LIBRARY SCENARIO_DIR GOLDEN_DIR [--update]"""

import os
import shutil
import subprocess
import sys
import unittest
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

AGENT, SIM, SCENARIOS, GOLDEN = sys.argv[1:5]
UPDATE = "--update" in sys.argv
CASES = [
    ("h100-training", 600), ("h100-training", 3600),
    ("h100-allocated-idle", 600),
    ("h100-nvlink-crc-incident", 300), ("h100-nvlink-crc-incident", 1200),
    ("h200-training", 600),
    ("a100-inference", 600),
    ("a100-mig", 600),
]
# Families whose values depend on the machine or the moment, not on the scenario.
VOLATILE_PREFIXES = ("gpuscope_collector_", "process_", "gpuscope_build_info")
# Families whose value is the wall-clock time the agent saw something: kept, value replaced.
WALL_CLOCK_VALUES = ("gpuscope_xid_last_seen_timestamp_seconds{",)


RAW = {}  # (scenario, seconds) -> the agent's unfiltered output, for promtool


def render(scenario, seconds, extra=()):
    env = dict(os.environ, GPUSCOPE_SIM_SCENARIO=os.path.join(SCENARIOS, scenario + ".yaml"),
               GPUSCOPE_SIM_TIME=str(seconds))
    result = subprocess.run([AGENT, "--once", "--nvml.library", SIM, "--gpu.hostname", "sim-node",
                             "--log.level", "warn",
                             # The simulator's pids are not processes of this machine: never look them up.
                             "--attribution.proc=false",
                             # The host's own sysfs is not part of a scenario.
                             "--no-collector.host", "--no-collector.infiniband", *extra],
                            env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"agent --once failed ({result.returncode}): {result.stderr}")
    RAW[(scenario, seconds)] = result.stdout
    kept = []
    for line in result.stdout.splitlines(keepends=True):
        name = line.split(" ")[2] if line.startswith("# ") else line
        if name.startswith(VOLATILE_PREFIXES):
            continue
        if line.startswith(WALL_CLOCK_VALUES):
            line = line.rsplit(" ", 1)[0] + " <wall-clock>\n"
        kept.append(line)
    return "".join(kept)


def promtool_findings(text):
    result = subprocess.run([shutil.which("promtool"), "check", "metrics"], input=text, capture_output=True,
                            text=True)
    return {line.strip() for line in (result.stdout + result.stderr).splitlines() if line.strip()}


class Golden(unittest.TestCase):
    def test_each_scenario_matches_its_golden_file(self):
        for scenario, seconds in CASES:
            with self.subTest(scenario=scenario, seconds=seconds):
                path = os.path.join(GOLDEN, f"{scenario}@{seconds}.prom")
                text = render(scenario, seconds)
                self.assertIn("DCGM_FI_DEV_GPU_UTIL{", text)
                if UPDATE:
                    with open(path, "w") as f:
                        f.write(text)
                with open(path) as f:
                    self.assertEqual(text, f.read(), f"{path} is stale: rerun with --update and review the diff")

    def test_rendering_is_deterministic_run_to_run(self):
        self.assertEqual(render("h100-training", 1234), render("h100-training", 1234))

    def test_promtool_finds_nothing_beyond_the_listed_dcgm_name_findings(self):
        if shutil.which("promtool") is None:
            self.skipTest("promtool not installed")
        with open(os.path.join(GOLDEN, "promtool-allowed.txt")) as f:
            allowed = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        seen = set()
        for scenario, seconds in CASES:
            if (scenario, seconds) not in RAW:
                render(scenario, seconds)
            findings = promtool_findings(RAW[(scenario, seconds)])
            unexpected = findings - allowed
            self.assertFalse(unexpected, f"{scenario}@{seconds}: unexpected promtool findings {sorted(unexpected)}")
            seen |= findings
        if UPDATE:
            print("promtool findings:\n" + "\n".join(sorted(seen)))


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

"""Runs the Prometheus remote-write sender compliance suite (github.com/prometheus/compliance/remotewrite/
sender, built with our adapter tests/tools/rw_compliance/compliance_test.go by scripts/build-peers.sh)
against gpuscope-agent, and prints one row per case: name, RFC level (MUST, SHOULD, MAY, RECOMMENDED),
pass/fail/skip, and the suite's assertion for a failure.

Fails (exit 1) when a MUST case fails that EXPECTED_FAILURES does not list with its reason, when a listed
case passes (the list must stay true), when the suite ran no case at all, or when the adapter's own test
(TestAdapter*, its OpenMetrics to text format conversion) fails. SHOULD, MAY and RECOMMENDED
failures are reported, not fatal.

Usage: rw_compliance_report.py AGENT SUITE_BINARY TEST2JSON EXPECTED_FAILURES [--markdown OUT]
       (GPUSCOPE_RW_COMPLIANCE_RUN=REGEX passes -test.run=REGEX to the suite)
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SUITE_TIMEOUT_S = 300
LEVELS = ("MUST", "SHOULD", "MAY", "RECOMMENDED")


def run_suite(agent, suite, test2json):
    """The suite's test2json events."""
    args = [test2json, "-t", suite, "-test.v=test2json", f"-test.timeout={SUITE_TIMEOUT_S}s"]
    if os.environ.get("GPUSCOPE_RW_COMPLIANCE_RUN"):
        args.append("-test.run=" + os.environ["GPUSCOPE_RW_COMPLIANCE_RUN"])
    env = dict(os.environ, GPUSCOPE_AGENT=os.path.abspath(agent))
    with tempfile.TemporaryDirectory(prefix="gpuscope-rw-compliance-") as cwd:
        result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                                timeout=SUITE_TIMEOUT_S + 30)
    events = []
    for line in result.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            print("suite:", line, file=sys.stderr)
    if result.stderr.strip():
        print(result.stderr.strip(), file=sys.stderr)
    return events


def adapter_failures(events):
    """The adapter's own tests (TestAdapter*) that did not pass."""
    results = {e["Test"]: e["Action"] for e in events
               if e.get("Test", "").startswith("TestAdapter") and e.get("Action") in ("pass", "fail", "skip")}
    failed = sorted(name for name, action in results.items() if action != "pass")
    if not results and not os.environ.get("GPUSCOPE_RW_COMPLIANCE_RUN"):
        failed.append("no TestAdapter* test ran")
    return failed


def cases(events):
    """{test name: {level, description, result, message}} for every test the suite gave an RFC level."""
    by_test = {}
    for e in events:
        test = e.get("Test")
        if not test:
            continue
        entry = by_test.setdefault(test, {"attrs": {}, "result": None, "output": []})
        action = e.get("Action")
        if action == "attr":
            entry["attrs"][e["Key"]] = e["Value"]
        elif action in ("pass", "fail", "skip"):
            entry["result"] = action
        elif action == "output":
            entry["output"].append(e["Output"])
    out = {}
    for test, entry in by_test.items():
        level = entry["attrs"].get("rfcLevel")
        if level is None:
            continue
        name = test.split("/", 2)[2] if test.count("/") >= 2 else test  # drop TestX/<sender>/
        out[name] = {"level": level, "description": entry["attrs"].get("description", ""),
                     "result": entry["result"] or "fail", "message": failure_message(entry["output"])}
    return out


def failure_message(output):
    """The lines of a failed case that say what was wrong (testify's Error: and Messages:, t.Fatal's)."""
    wanted = []
    for line in output:
        text = line.strip()
        if not text or text.startswith(("=== ", "--- ", "Error Trace:", "Test:", "github.com/")):
            continue
        for prefix in ("Error:", "Messages:"):
            if text.startswith(prefix):
                text = text[len(prefix):].strip()
        located = re.match(r"^\S+\.go:\d+: ?(.*)$", text)  # "samples.go:66: message"
        if located:
            text = located.group(1)
        if text:
            wanted.append(text)
    return " ".join(wanted)[:300]


def read_expected(path):
    """{case name: reason} of the MUST cases expected to fail."""
    expected = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            name, _, reason = line.partition("#")
            name = name.strip()
            if name:
                expected[name] = reason.strip()
    return expected


def table(results):
    rows = ["| case | RFC level | result | what the suite saw |", "|---|---|---|---|"]
    order = {level: i for i, level in enumerate(LEVELS)}
    for name, r in sorted(results.items(), key=lambda kv: (order.get(kv[1]["level"], 9), kv[0])):
        message = r["message"].replace("|", "\\|") if r["result"] == "fail" else ""
        rows.append(f"| {name} — {r['description']} | {r['level']} | {r['result']} | {message} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("agent")
    parser.add_argument("suite")
    parser.add_argument("test2json")
    parser.add_argument("expected_failures")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()

    started = time.monotonic()
    events = run_suite(args.agent, args.suite, args.test2json)
    results = cases(events)
    elapsed = time.monotonic() - started
    expected = read_expected(args.expected_failures)
    print(table(results))
    counts = {level: [0, 0] for level in LEVELS}
    for r in results.values():
        counts.setdefault(r["level"], [0, 0])[0 if r["result"] == "pass" else 1] += 1
    summary = ", ".join(f"{level} {p}/{p + f}" for level, (p, f) in counts.items() if p + f)
    print(f"\nrw-compliance: passed {summary} in {elapsed:.0f} s")

    problems = []
    if not results:
        problems.append("the suite ran no case")
    for name in adapter_failures(events):
        problems.append(f"the adapter's own test failed: {name}")
    for name, r in sorted(results.items()):
        if r["level"] == "MUST" and r["result"] != "pass" and name not in expected:
            problems.append(f"MUST case {name} {r['result']}ed: {r['message']}")
        if name in expected and r["result"] == "pass":
            problems.append(f"{name} passes: remove it from {args.expected_failures}")
    for name in sorted(set(expected) - set(results)):
        problems.append(f"{name} is listed in {args.expected_failures} but the suite has no such case")
    for problem in problems:
        print("rw-compliance:", problem)

    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(table(results) + "\n\n" + f"Passed: {summary}; {elapsed:.0f} s.\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

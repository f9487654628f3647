"""Component: the `gpuscope` command's help and usage errors, as a person meets them first. Every command of
the table is listed with its summary in one column, `gpuscope COMMAND --help` prints its usage and flags,
and a missing or unknown command or flag is a usage error (exit 2) that names the mistake.

Usage: cli_help_test.py GPUSCOPE"""

import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

GPUSCOPE = sys.argv[1]
COMMANDS = ("job", "top", "chargeback", "check", "inventory", "profile-pause", "profile-resume", "profile-status")


def run(*args):
    return subprocess.run([GPUSCOPE, *args], capture_output=True, text=True, timeout=30)


class GpuscopeHelp(unittest.TestCase):
    def test_every_command_is_listed_with_its_summary_in_one_column(self):
        done = run("--help")
        self.assertEqual(done.returncode, 0, done.stderr)
        rows = [line for line in done.stdout.splitlines() if re.match(r"  \S", line)]
        self.assertEqual([r.split()[0] for r in rows], list(COMMANDS))
        columns = {re.match(r"  \S+ +", r).end() for r in rows}
        self.assertEqual(len(columns), 1, rows)
        for r in rows:
            self.assertRegex(r, r"^  \S+  +\S")  # at least two spaces between name and summary

    def test_each_command_prints_its_usage_and_flags(self):
        for command in COMMANDS:
            done = run(command, "--help")
            self.assertEqual(done.returncode, 0, f"{command}: {done.stderr}")
            self.assertTrue(done.stdout.startswith(f"Usage: gpuscope {command}"), done.stdout[:80])
            self.assertIn("\nFlags:\n", done.stdout)
            # check and the profile commands talk to the local agent, the others read Prometheus.
            local = command == "check" or command.startswith("profile-")
            self.assertIn("--agent.url=VALUE" if local else "--prometheus.url=VALUE", done.stdout)

    def test_missing_or_unknown_commands_and_flags_are_usage_errors(self):
        self.assertEqual(run().returncode, 2)
        unknown = run("frobnicate")
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("unknown command 'frobnicate'", unknown.stderr)
        for command in COMMANDS:
            done = run(command, "--no-such-flag")
            self.assertEqual(done.returncode, 2, f"{command}: {done.stdout}")
            self.assertIn("no-such-flag", done.stderr)
            self.assertEqual(done.stdout, "")


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

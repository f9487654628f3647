"""Component: the sites' documentation (docs/deploy/*.md, deploy/systemd/README.md, deploy/packages/README.md)
names only what exists: every `--flag` in a code span is a flag of `gpuscope-agent --help` (with the
collector switches it derives) or of a `gpuscope` command's --help, every `gpuscope_*` and `DCGM_FI_*`
metric in a code span is in docs/metrics.md, every alert named as a runbook has its page, and every
relative link points at a file of the repository.

Usage: deploy_docs_test.py REPO_ROOT AGENT GPUSCOPE"""

import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import unittest_main  # noqa: E402

REPO, AGENT, CLI = sys.argv[1:4]
PAGES = [os.path.join(REPO, "docs", "deploy", name) for name in sorted(os.listdir(os.path.join(REPO, "docs", "deploy")))
         if name.endswith(".md")] + [os.path.join(REPO, "deploy", "systemd", "README.md"),
                                     os.path.join(REPO, "deploy", "packages", "README.md")]
FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9.-]*[a-z0-9])")
METRIC = re.compile(r"\b((?:gpuscope|DCGM_FI)_[A-Za-z0-9_]+)")


def code_spans(text):
    """The text of every `code span` and ``` block."""
    spans = re.findall(r"```.*?```", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return spans + re.findall(r"`([^`\n]+)`", text)


def help_text(*args):
    return subprocess.run(list(args), capture_output=True, text=True, check=True).stdout


def agent_flags():
    text = help_text(AGENT, "--help")
    flags = set(re.findall(r"^  --([a-z][a-z0-9.-]*)", text, flags=re.M))
    collectors = re.findall(r"^  ([a-z_]+) \((?:enabled|disabled), every", text, flags=re.M)
    for name in collectors:
        flags |= {f"collector.{name}", f"no-collector.{name}", f"collector.{name}.interval"}
    flags |= {f"no-{f}" for f in list(flags)}
    return flags


def cli_flags():
    main = help_text(CLI, "--help")
    commands = re.findall(r"^  ([a-z]+)  ", main, flags=re.M)
    flags = {"help", "version"}
    for command in commands:
        text = help_text(CLI, command, "--help")
        flags |= set(re.findall(r"^  --([a-z][a-z0-9.-]*)", text, flags=re.M))
    return flags


class DeployDocs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pages = {}
        for path in PAGES:
            with open(path) as f:
                cls.pages[os.path.relpath(path, REPO)] = f.read()
        with open(os.path.join(REPO, "docs", "metrics.md")) as f:
            cls.metrics = set(re.findall(r"^\| `([A-Za-z_:][A-Za-z0-9_:]*)` \|", f.read(), flags=re.M))

    def test_every_flag_exists(self):
        known = agent_flags() | cli_flags()
        # Flags of other programs the pages show in full commands (apt, dpkg, systemctl, journalctl, ninja).
        foreign = {"force-confold", "force-confdef", "now", "no-pager", "no-block", "tag-display-limit", "system",
                   "out", "overrides",  # apt/dpkg, systemctl, lintian, useradd, the mixin's generate.sh
                   "export-filename"}  # tetragon
        unknown = {}
        for page, text in self.pages.items():
            for span in code_spans(text):
                for flag in FLAG.findall(span):
                    if flag not in known and flag not in foreign:
                        unknown.setdefault(page, set()).add("--" + flag)
        self.assertEqual(unknown, {})

    def test_every_metric_is_in_the_reference(self):
        self.assertGreater(len(self.metrics), 100)
        unknown = {}
        for page, text in self.pages.items():
            for span in code_spans(text):
                for name in METRIC.findall(span):
                    base = re.sub(r"_(bucket|sum|count)$", "", name)
                    if name not in self.metrics and base not in self.metrics:
                        unknown.setdefault(page, set()).add(name)
        self.assertEqual(unknown, {})

    def test_every_relative_link_points_at_a_file(self):
        broken = []
        for page, text in self.pages.items():
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                path = os.path.normpath(os.path.join(REPO, os.path.dirname(page), target.split("#")[0]))
                if not os.path.exists(path):
                    broken.append(f"{page}: {target}")
        self.assertEqual(broken, [])

    def test_every_runbook_named_exists(self):
        runbooks = set(os.listdir(os.path.join(REPO, "docs", "runbooks")))
        missing = set()
        for page, text in self.pages.items():
            for name in re.findall(r"`((?:Gpu|Gpuscope|Vllm|Triton)[A-Z][A-Za-z]+)`", text):
                if f"{name}.md" not in runbooks:
                    missing.add(f"{page}: {name}")
        self.assertEqual(missing, set())


if __name__ == "__main__":
    unittest_main.main(argv=sys.argv[:1])

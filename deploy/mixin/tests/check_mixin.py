#!/usr/bin/env python3
"""Checks of the gpuscope mixin beyond promtool's own (registered by deploy/mixin/CMakeLists.txt):

    check_mixin.py alert-tests    every alert has a firing and a not-firing promtool case in tests/*.yaml
    check_mixin.py metadata       every alert has severity/team/category/scope, summary/description/
                                  runbook_url; each runbook exists and is indexed in docs/runbooks/README.md
    check_mixin.py routes         amtool: each team/severity (and the job owner) reaches its receiver,
                                  and every alert of the rules reaches the receiver its labels call for
    check_mixin.py inhibitions    a real Alertmanager with the generated routes: each inhibition holds back
                                  its targets and only them; the others reach their webhook receivers
    check_mixin.py site [DIR]     the generated files in DIR (default: the committed generated/) are ready
                                  for a site: no placeholder URL left (hosts under .invalid), none of the
                                  demo's (demo.libsonnet), absolute runbook URLs, and promtool and amtool
                                  accept them. Fails on the committed files, which carry the placeholders.

Standard library plus PyYAML (Debian python3-yaml; jsonnet 0.18's std.parseYaml garbles block scalars
and promtool's series notation).
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
MIXIN = os.path.dirname(HERE)
ROOT = os.path.abspath(os.path.join(MIXIN, "..", ".."))
GENERATED = os.path.join(MIXIN, "generated")
ALERTING_RULES = os.path.join(GENERATED, "prometheus", "alerting_rules.yaml")
ALERTMANAGER_CONFIG = os.path.join(GENERATED, "alertmanager", "alertmanager.yml")
RUNBOOKS = os.path.join(ROOT, "docs", "runbooks")
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

SEVERITIES = {"page", "ticket", "info"}
TEAMS = {"infra", "ml-platform", "security"}
# The one team label that is not a fixed team: the owning service (the series' team label, else the
# config's default).
SERVICE_TEAM = re.compile(r"^\{\{ with \$labels\.team \}\}\{\{ \. \}\}\{\{ else \}\}[a-z0-9-]+\{\{ end \}\}$")
# Alerts about a namespace's pods or quota: the team their expression computes (the pod's or namespace's
# team, never empty), with tenant naming the namespace.
NAMESPACE_TEAM = "{{ $labels.team }}"
TENANT = "{{ $labels.namespace }}"


def read_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def alerts():
    """{name: rule} of the generated alerting rules (the first rule of each name). An alert may have several
    forms (GpuTrainingStraggler: from training telemetry where a job reports it, else from utilisation): the
    rules of one name must then carry the same labels and runbook, and each its own summary and
    description, so that routing, inhibition and the runbook cannot tell the forms apart."""
    rules = {}
    for group in read_yaml(ALERTING_RULES)["groups"]:
        for rule in group["rules"]:
            name = rule["alert"]
            if name in rules:
                first = rules[name]
                assert rule.get("labels") == first.get("labels"), f"alert {name}: forms with different labels"
                annotations = rule.get("annotations", {})
                assert annotations.get("runbook_url") == first["annotations"].get("runbook_url"), \
                    f"alert {name}: forms with different runbooks"
                assert annotations.get("summary", "").strip() and annotations.get("description", "").strip(), \
                    f"alert {name}: a form without summary or description"
                continue
            rules[name] = rule
    return rules


def check_alert_tests():
    firing, quiet, unknown = set(), set(), set()
    names = alerts()
    for path in sorted(glob.glob(os.path.join(HERE, "*.yaml"))):
        for test in read_yaml(path).get("tests", []):
            for case in test.get("alert_rule_test", []):
                name = case["alertname"]
                if name not in names:
                    unknown.add(f"{os.path.basename(path)}: {name}")
                (firing if case.get("exp_alerts") else quiet).add(name)
    cmake = open(os.path.join(MIXIN, "CMakeLists.txt"), encoding="utf-8").read()
    problems = [f"tests/{os.path.basename(p)} is not run: list it in deploy/mixin/CMakeLists.txt"
                for p in sorted(glob.glob(os.path.join(HERE, "*.yaml")))
                if f"/tests/{os.path.basename(p)}" not in cmake]
    problems += [f"{n}: no firing case" for n in sorted(set(names) - firing)]
    problems += [f"{n}: no not-firing case" for n in sorted(set(names) - quiet)]
    problems += [f"test of an unknown alert: {u}" for u in sorted(unknown)]
    return problems, f"{len(names)} alerts, each with a firing and a not-firing case"


def runbook_base():
    return json.loads(subprocess.run(["jsonnet", "-e", "(import 'config.libsonnet').runbookUrlBase"], cwd=MIXIN,
                                     check=True, capture_output=True, text=True).stdout)


def check_metadata():
    problems = []
    base = runbook_base()
    names = alerts()
    for name, rule in names.items():
        labels, annotations = rule.get("labels", {}), rule.get("annotations", {})
        if labels.get("severity") not in SEVERITIES:
            problems.append(f"{name}: severity {labels.get('severity')!r} is not one of {sorted(SEVERITIES)}")
        team = labels.get("team", "")
        if team == NAMESPACE_TEAM:
            if labels.get("tenant") != TENANT:
                problems.append(f"{name}: a namespace's team without tenant {TENANT!r}")
        elif team not in TEAMS and not SERVICE_TEAM.match(team):
            problems.append(f"{name}: team {team!r} is neither {sorted(TEAMS)}, the owning service nor a "
                            "namespace's team")
        for key in ("category", "scope"):
            if not labels.get(key):
                problems.append(f"{name}: no {key} label")
        for key in ("summary", "description", "runbook_url"):
            if not annotations.get(key, "").strip():
                problems.append(f"{name}: no {key} annotation")
        if annotations.get("runbook_url") != f"{base}{name}.md":
            problems.append(f"{name}: runbook_url {annotations.get('runbook_url')!r} is not {base}{name}.md")
        runbook = os.path.join(RUNBOOKS, f"{name}.md")
        if not os.path.isfile(runbook):
            problems.append(f"{name}: {os.path.relpath(runbook, ROOT)} does not exist")
        else:
            text = open(runbook, encoding="utf-8").read()
            for section in ("## What it means", "## First look", "## Decide", "## Escalate"):
                if section not in text:
                    problems.append(f"{name}: runbook lacks the section '{section}'")
    index = open(os.path.join(RUNBOOKS, "README.md"), encoding="utf-8").read()
    for name in names:
        if f"({name}.md)" not in index:
            problems.append(f"{name}: not listed in docs/runbooks/README.md")
    for path in glob.glob(os.path.join(RUNBOOKS, "*.md")):
        name = os.path.basename(path)[:-3]
        if name != "README" and name not in names:
            problems.append(f"docs/runbooks/{name}.md: no alert of that name")
    problems += check_runbook_queries()
    return problems, f"{len(names)} alerts with labels, annotations and runbooks"


def check_runbook_queries():
    """Every line of a runbook's ```promql block (placeholders <...> filled in) parses: promtool checks
    them as the expressions of a rule file."""
    rules = []
    for path in sorted(glob.glob(os.path.join(RUNBOOKS, "*.md"))):
        text = open(path, encoding="utf-8").read()
        for block in re.findall(r"```promql\n(.*?)```", text, re.S):
            for line in block.splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    rules.append({"record": "runbook:query:check", "expr": re.sub(r"<[a-z_]+>", "x", line),
                                  "labels": {"runbook": os.path.basename(path), "n": str(len(rules))}})
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump({"groups": [{"name": "runbook-queries", "rules": rules}]}, f)
    try:
        out = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        return [f"a runbook query does not parse: {out.stdout.strip()} {out.stderr.strip()}"]
    return []


# (labels, receiver): the routing policy, one case per team x severity, plus the job owner's route.
ROUTE_CASES = [
    ({"team": "infra", "severity": "page"}, "infra-page"),
    ({"team": "infra", "severity": "ticket"}, "infra-ticket"),
    ({"team": "infra", "severity": "info"}, "info"),
    ({"team": "ml-platform", "severity": "page"}, "ml-platform-page"),
    ({"team": "ml-platform", "severity": "ticket"}, "ml-platform-ticket"),
    ({"team": "ml-platform", "severity": "info"}, "info"),
    ({"team": "ml-platform", "severity": "ticket", "owner": "alice"}, "job-owner"),
    ({"team": "ml-platform", "severity": "info", "owner": "alice"}, "info"),
    ({"team": "inference", "severity": "page"}, "service-page"),
    ({"team": "chat", "severity": "ticket"}, "service-ticket"),
    ({"team": "chat", "severity": "info"}, "info"),
    ({"severity": "page"}, "service-page"),  # no team label at all: treated as an unnamed service
    ({"team": "research", "tenant": "research-ns", "severity": "ticket"}, "namespace-team"),
    ({"team": "research", "tenant": "research-ns", "severity": "page"}, "namespace-team"),
    ({"team": "research", "tenant": "research-ns", "severity": "info"}, "info"),
    ({"team": "ml-platform", "tenant": "default", "severity": "ticket"}, "ml-platform-ticket"),
    ({"team": "infra", "tenant": "kube-system", "severity": "ticket"}, "infra-ticket"),
    # The security team: one receiver for pages and tickets, never the job's owner nor a namespace's team.
    ({"team": "security", "severity": "page"}, "security"),
    ({"team": "security", "severity": "ticket"}, "security"),
    ({"team": "security", "severity": "info"}, "info"),
    ({"team": "security", "severity": "ticket", "owner": "alice"}, "security"),
    ({"team": "security", "tenant": "research-ns", "severity": "ticket"}, "security"),
]


def expected_receiver(labels):
    team, severity = labels.get("team"), labels.get("severity")
    if severity == "info":
        return "info"
    if team == "infra":
        return f"infra-{severity}"
    if team == "ml-platform":
        return "job-owner" if labels.get("owner") else f"ml-platform-{severity}"
    if team == "security":
        return "security"
    if labels.get("tenant"):
        return "namespace-team"
    return f"service-{severity}"


def amtool_receivers(labels):
    args = ["amtool", "config", "routes", "test", f"--config.file={ALERTMANAGER_CONFIG}"]
    args += [f"{k}={v}" for k, v in sorted(labels.items())]
    out = subprocess.run(args, capture_output=True, text=True)
    return out.stdout.strip()


def check_routes():
    problems = []
    cases = list(ROUTE_CASES)
    for name, rule in alerts().items():
        labels = {k: v for k, v in rule["labels"].items() if "{{" not in v}
        labels["alertname"] = name
        labels.setdefault("team", "inference")  # the owning service's default
        cases.append((labels, expected_receiver(labels)))
        if "owner" in rule["labels"]:
            with_owner = dict(labels, owner="alice")
            cases.append((with_owner, expected_receiver(with_owner)))
        if rule["labels"].get("tenant") == TENANT:
            # A namespace's team: one of its own, or a fixed team the namespace maps to.
            for team in ("research", "infra", "ml-platform"):
                tenant = dict(labels, team=team, tenant="research-ns")
                cases.append((tenant, expected_receiver(tenant)))
    for labels, receiver in cases:
        got = amtool_receivers(labels)
        if got != receiver:
            problems.append(f"{labels}: routed to {got!r}, expected {receiver!r}")
    return problems, f"{len(cases)} routing cases"


INHIBITORS = {"GpuNodeDraining", "GpuscopeAgentDown", "GpuNodeGpusMissing"}
# Posted with the inhibitors, first: node-level pages/tickets that must hold nothing back (the event alerts).
NOT_INHIBITORS = {"GpuNvswitchFatalError", "GpuNodeOomKills", "GpuscopeKubeletPodResourcesDown",
                  "GpuscopeEbpfProgramNotLoaded", "GpuscopeDcgmDown", "GpuProfilingPausedTooLong"}


def check_inhibitions():
    import fleet  # tests/integration/fleet.py: the real Alertmanager and webhook receiver
    import harness

    rules = alerts()

    def alert(name, **labels):
        static = {k: v for k, v in rules[name]["labels"].items() if "{{" not in v}
        return {"labels": dict(static, alertname=name, **labels), "annotations": {"summary": name}}

    n1 = {"instance": "n1:9400", "Hostname": "n1"}
    n2 = {"instance": "n2:9400", "Hostname": "n2"}
    n3 = {"instance": "n3:9400", "Hostname": "n3"}
    n4 = {"instance": "n4:9400", "Hostname": "n4"}
    gpu0 = {"gpu": "0", "UUID": "GPU-0"}
    # (alert, inhibited?)
    cases = [
        # Slurm drains n1: no utilisation alerts there, hardware alerts still go out.
        (alert("GpuNodeDraining", node="n1", Hostname="n1", reason="repair"), False),
        (alert("GpuAllocatedIdle", hpc_job="1", owner="alice", **n1, **gpu0), True),
        (alert("GpuTrainingStraggler", hpc_job="1", owner="alice", **n1, **gpu0), True),
        (alert("GpuEccDoubleBitError", **n1, **gpu0), False),
        (alert("GpuAllocatedIdle", hpc_job="4", owner="bob", **n4, **gpu0), False),
        # n2's agent is down: no utilisation or event alerts for it, and no GPU-level ones (node-level wins).
        (alert("GpuscopeAgentDown", job="gpuscope", **n2), False),
        (alert("GpuTrainingStraggler", hpc_job="2", owner="bob", **n2, **gpu0), True),
        (alert("GpuTemperatureHigh", **n2, **gpu0), True),
        (alert("GpuscopeEventsLost", stage="queue", sink="loki", reason="full", **n2), True),
        (alert("GpuNodeCollectiveErrors", **{"class": "nccl_watchdog"}, **n2), True),
        # Node-level event alerts on n4 (a page and a ticket) hold back none of n4's GPU-level alerts.
        (alert("GpuNvswitchFatalError", **n4), False),
        (alert("GpuNodeOomKills", **{"class": "oom"}, **n4), False),
        (alert("GpuTemperatureHigh", **n4, **gpu0), False),
        # Nor does the kubelet's pod-resources source failing on n4 (its GPUs are still watched); a pod's
        # idle GPU reaches its namespace's team there, and is held back on n2 whose agent is down.
        (alert("GpuscopeKubeletPodResourcesDown", **n4), False),
        (alert("GpuPodAllocatedIdle", namespace="research-ns", pod="nb-0", tenant="research-ns", team="research",
               **n4, **gpu0), False),
        (alert("GpuPodAllocatedIdle", namespace="research-ns", pod="nb-1", tenant="research-ns", team="research",
               **n2, **gpu0), True),
        (alert("GpuscopeEventsLost", stage="kmsg", **n1), False),
        # Nor does DCGM lost or a profiling pause on n4 (NVML still watches its GPUs): a DCGM health warning
        # there reaches infra; a DCGM health failure on n3, whose GPUs are missing, is held back.
        (alert("GpuscopeDcgmDown", mode="hostengine", **n4), False),
        (alert("GpuProfilingPausedTooLong", **n4), False),
        (alert("GpuDcgmHealthWarning", system="pcie", **n4, **gpu0), False),
        (alert("GpuDcgmHealthFailure", system="memory", **n3, **gpu0), True),
        # Security alerts are held back by nothing: what a job did stays visible while its node's agent is
        # down (n2) or its GPUs are gone (n3); an eBPF probe not loaded on n4 holds back none of n4's alerts.
        (alert("GpuJobUnexpectedConnection", hpc_job="2", destination="203.0.113.7:443", **n2), False),
        (alert("FalcoCriticalEvent", rule="Terminal shell in container", priority="Critical", **n3), False),
        (alert("GpuscopeEbpfProgramNotLoaded", program="connect", **n4), False),
        (alert("GpuJobCheckpointForeignAccess", hpc_job="4", dir="/checkpoints", user="mallory", file_owner="bob",
               **n4), False),
        # n3 lost GPUs (node-level page): its GPU-level alerts are held back; n1's are not.
        (alert("GpuNodeGpusMissing", **n3), False),
        (alert("GpuXidCritical", xid="79", action="reboot", **n3, **gpu0), True),
        (alert("GpuXidCritical", xid="79", action="reboot", **n1, gpu="1", UUID="GPU-1"), False),
        # Cluster- and service-level alerts are never inhibited by node-level ones.
        (alert("GpuClusterAllocationHigh"), False),
        (alert("VllmP99LatencyHigh", team="chat", job="vllm", model_name="llama"), False),
    ]

    workdir = tempfile.mkdtemp(prefix="gpuscope-mixin-inhibit-")
    receiver = fleet.WebhookReceiver()
    overrides = os.path.join(workdir, "overrides.libsonnet")
    with open(overrides, "w") as f:
        f.write(json.dumps({"alertmanager": {"webhookBaseUrl": receiver.url + "/", "groupWait": "0s",
                                             "groupInterval": "1s"}}))
    subprocess.run([os.path.join(MIXIN, "generate.sh"), "--out", os.path.join(workdir, "out"), "--overrides",
                    overrides], check=True, capture_output=True)
    manager = fleet.Alertmanager(os.path.join(workdir, "out", "alertmanager", "alertmanager.yml"), workdir)
    problems = []
    try:
        # The inhibiting alerts first, as in life (a node drains before its idle alerts have waited 30
        # minutes): an alert that arrives together with its inhibitor may be sent before the inhibitor
        # is seen.
        # Alertmanager's inhibitor reads new alerts asynchronously: a probe that the drain inhibits shows
        # when it has seen them (the probe itself is left out of the checks below).
        sources = [c[0] for c in cases if c[0]["labels"]["alertname"] in INHIBITORS | NOT_INHIBITORS]
        probe = alert("GpuAllocatedIdle", hpc_job="probe", **n1, **gpu0)
        manager.post(sources + [probe])

        def probe_inhibited():
            return any(a["labels"] == probe["labels"] and a["status"]["inhibitedBy"] for a in manager.alerts())

        harness.wait_for(probe_inhibited, 30, "the inhibitor to see the inhibiting alerts")
        manager.post([c[0] for c in cases if c[0] not in sources])

        def key(labels):
            return json.dumps({k: v for k, v in labels.items()}, sort_keys=True)

        want = {key(c[0]["labels"]): c[1] for c in cases}
        want[key(probe["labels"])] = True

        def settled():
            got = {key(a["labels"]): bool(a["status"]["inhibitedBy"]) for a in manager.alerts()}
            return got if len(got) == len(want) and got == want else None

        try:
            harness.wait_for(settled, 30, "Alertmanager to inhibit exactly the expected alerts")
        except AssertionError:
            got = {key(a["labels"]): bool(a["status"]["inhibitedBy"]) for a in manager.alerts()}
            for k, inhibited in want.items():
                if got.get(k) != inhibited:
                    problems.append(f"{k}: inhibited={got.get(k)}, expected {inhibited}")
        # Every alert not inhibited reaches the webhook of its route; no inhibited one does.
        expected = {(expected_receiver(c[0]["labels"]), c[0]["labels"]["alertname"],
                     c[0]["labels"].get("Hostname", "")) for c in cases if not c[1]}

        def delivered():
            got = {(r, labels["alertname"], labels.get("Hostname", "")) for r, labels, _ in receiver.received()}
            return got if expected <= got else None

        try:
            harness.wait_for(delivered, 30, "the notifications of the alerts not inhibited")
        except AssertionError as exc:
            problems.append(str(exc))
        got = {(r, labels["alertname"], labels.get("Hostname", "")) for r, labels, _ in receiver.received()
               if labels.get("hpc_job") != "probe"}
        for extra in sorted(got - expected):
            problems.append(f"notification that should have been inhibited or routed elsewhere: {extra}")
    finally:
        manager.stop()
        receiver.stop()
    return problems, f"{len(cases)} alerts through 3 inhibit rules and the routes"


def demo_values():
    """{scheme://host:port: what it is} of the demo's URLs (demo.libsonnet), and its runbook URL base."""
    demo = json.loads(subprocess.run(["jsonnet", "-e", "import 'demo.libsonnet'"], cwd=MIXIN, check=True,
                                     capture_output=True, text=True).stdout)
    origins = {origin(demo["alertmanager"]["webhookBaseUrl"]): "the demo's webhook receiver",
               origin(demo["dashboards"]["prometheusUrl"]): "the demo's Prometheus"}
    return origins, demo["runbookUrlBase"]


def origin(url):
    parsed = urllib.parse.urlsplit(url)
    return f"{parsed.scheme}://{parsed.netloc}"


def site_url_problem(url, setting, demo_origins):
    """Why url cannot be a site's value of the config key `setting`, or None."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return f"{url!r} is not an absolute http(s) URL: set {setting}"
    if parsed.hostname == "invalid" or parsed.hostname.endswith(".invalid"):
        return f"{url} is a placeholder (.invalid never resolves): set {setting}"
    if origin(url) in demo_origins:
        return f"{url} is {demo_origins[origin(url)]} (demo.libsonnet): set {setting}"
    return None


def check_site(directory=GENERATED):
    """The generated files in directory, as a site would load them: every URL a site must set is set."""
    directory = os.path.abspath(directory)
    rule_files = [os.path.join(directory, "prometheus", f) for f in ("recording_rules.yaml", "alerting_rules.yaml")]
    alertmanager_config = os.path.join(directory, "alertmanager", "alertmanager.yml")
    datasources = sorted(glob.glob(os.path.join(directory, "grafana", "provisioning", "datasources", "*.yaml")))
    missing = [p for p in rule_files + [alertmanager_config] if not os.path.isfile(p)]
    if not datasources:
        missing.append(os.path.join(directory, "grafana", "provisioning", "datasources", "*.yaml"))
    if missing:
        return [f"{p}: missing (generate.sh --out {directory} --overrides SITE.libsonnet)" for p in missing], ""
    demo_origins, _ = demo_values()
    problems = []
    # runbook_url of every alert; one line per distinct problem, the alert's name abstracted.
    runbooks = {}
    for group in read_yaml(rule_files[1])["groups"]:
        for rule in group["rules"]:
            if "alert" not in rule:
                continue
            url = rule.get("annotations", {}).get("runbook_url", "")
            problem = site_url_problem(url, "runbookUrlBase", demo_origins)
            if problem:
                runbooks.setdefault(problem.replace(rule["alert"], "<AlertName>"), []).append(rule["alert"])
    problems += [f"runbook_url of {len(names)} alert(s) ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}): "
                 f"{problem}" for problem, names in runbooks.items()]
    for receiver in read_yaml(alertmanager_config).get("receivers", []):
        name = receiver["name"]
        for key, configs in receiver.items():
            for config in configs if key.endswith("_configs") else []:
                for field in ("url", "api_url"):
                    if field in config:
                        problem = site_url_problem(config[field], f"alertmanager.webhookBaseUrl or "
                                                   f"alertmanager.receiverUrls['{name}']", demo_origins)
                        if problem:
                            problems.append(f"receiver {name}: {problem}")
    for path in datasources:
        for source in read_yaml(path).get("datasources", []):
            problem = site_url_problem(source.get("url", ""), "dashboards.prometheusUrl", demo_origins)
            if problem:
                problems.append(f"Grafana data source {source.get('name')}: {problem}")
    for args in (["promtool", "check", "rules", *rule_files], ["amtool", "check-config", alertmanager_config]):
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode != 0:
            problems.append(f"{' '.join(args[:2])} refuses the files: {out.stdout.strip()} {out.stderr.strip()}")
    return problems, f"{directory} is ready to load: every site URL set, promtool and amtool accept it"


CHECKS = {
    "alert-tests": check_alert_tests,
    "metadata": check_metadata,
    "routes": check_routes,
    "inhibitions": check_inhibitions,
    "site": check_site,
}


def main(argv):
    if len(argv) < 2 or argv[1] not in CHECKS or len(argv) > (3 if argv[1] == "site" else 2):
        print(f"usage: {argv[0]} {{{'|'.join(CHECKS)}}}  (site takes an optional generated folder)", file=sys.stderr)
        return 2
    problems, what = CHECKS[argv[1]](*argv[2:])
    for p in problems:
        print(f"FAIL {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"ok: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Lints the generated gpuscope dashboards (deploy/mixin/generated/dashboards/*.json):

- uids and titles are unique, every panel id within a dashboard is unique;
- every datasource reference (panels, targets, annotations, query variables) is the ${datasource}
  template variable of type prometheus, and that variable exists;
- every $variable used is defined, every defined variable is used by a query (the datasource variable
  by the datasource references), and variables sit in regex matchers (=~) so that All and multi-values work;
- every query parses: the queries, variables substituted, go through `promtool check rules` as recording
  rules of a temporary rule file (promtool has no expression checker of its own);
- every recorded series a query reads (a name with a colon) is written by the mixin's recording rules, and
  every other metric is documented in docs/metrics.md (or is Prometheus' own `up`), a histogram's
  `_bucket`, `_count` and `_sum` series by their family's row;
- every link to a dashboard (/d/<uid>) resolves, and the L1..L5 hierarchy links each level to the next and
  back.

Usage: dashboard_lint.py --dashboards DIR --promtool PATH [--recording-rules FILE] [--metrics-doc FILE]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import dashboard_queries as dq  # noqa: E402

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
BUILTINS = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms",
            "__url_time_range", "__value", "__data", "__field", "__series", "__from", "__to", "__all",
            "__dashboard", "__org", "__user", "timeFilter"}
LEVELS = ["gpuscope-l1-fleet", "gpuscope-l2-cluster", "gpuscope-l3-node", "gpuscope-l4-job", "gpuscope-l5-gpu"]
# Metrics a query may read that gpuscope's agent does not expose.
EXTERNAL_METRICS = {"up"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and",
                "or", "unless"}


class Lint:
    def __init__(self):
        self.errors = []

    def error(self, where, message):
        self.errors.append(f"{where}: {message}")


def walk(node, path=""):
    """(path, key, value) of every dict entry in a JSON tree."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield path, key, value
            yield from walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, f"{path}[{i}]")


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def check_ids(lint, dashboard, name):
    ids = [p.get("id") for p in dq.all_panels(dashboard)]
    if None in ids:
        lint.error(name, "a panel has no id")
    duplicates = sorted({i for i in ids if i is not None and ids.count(i) > 1})
    if duplicates:
        lint.error(name, f"duplicate panel ids {duplicates}")
    for panel in dq.all_panels(dashboard):
        if panel.get("type") != "row" and not panel.get("title"):
            lint.error(name, f"panel {panel.get('id')} has no title")


def check_datasources(lint, dashboard, name):
    variables = dashboard.get("templating", {}).get("list", [])
    ds_vars = [v for v in variables if v.get("type") == "datasource" and v.get("name") == "datasource"]
    if len(ds_vars) != 1 or ds_vars[0].get("query") != "prometheus":
        lint.error(name, "needs exactly one template variable 'datasource' of type datasource, query prometheus")
    for path, key, value in walk(dashboard):
        if key == "datasource" and value != DATASOURCE:
            lint.error(name, f"{path}.datasource is {value!r}, not the ${{datasource}} variable")
    for panel in dq.all_panels(dashboard):
        if panel.get("type") in ("row", "text"):
            continue
        if panel.get("datasource") != DATASOURCE:
            lint.error(name, f"panel {panel.get('title')!r} does not use ${{datasource}}")
        for target in panel.get("targets", []):
            if target.get("datasource") != DATASOURCE:
                lint.error(name, f"panel {panel.get('title')!r} target {target.get('refId')} does not use ${{datasource}}")


def check_variables(lint, dashboard, name):
    variables = dashboard.get("templating", {}).get("list", [])
    defined = [v["name"] for v in variables]
    if len(set(defined)) != len(defined):
        lint.error(name, f"variables defined twice: {defined}")
    # Everything but the templating list itself can use variables; a variable's query can use others.
    rest = {k: v for k, v in dashboard.items() if k != "templating"}
    used_anywhere = set()
    for text in strings(rest):
        used_anywhere.update(dq.variable_names(text))
    used_in_queries = set()
    for q in dq.raw_queries(dashboard, include_annotations=True, include_variables=False):
        used_in_queries.update(dq.variable_names(q.expr))
    for variable in variables:
        for text in strings({k: v for k, v in variable.items() if k not in ("name", "current")}):
            names = set(dq.variable_names(text)) - {variable["name"]}
            used_anywhere.update(names)
            used_in_queries.update(names - {"datasource"})
    for used in sorted(used_anywhere - set(defined) - BUILTINS):
        lint.error(name, f"${used} is used but not defined")
    for variable in defined:
        if variable == "datasource":
            continue
        if variable not in used_in_queries:
            lint.error(name, f"variable {variable} is defined but no query uses it")
    # Variables in queries must sit inside a regex matcher: label=~"...$var..." (All is '.*', multi 'a|b').
    for q in dq.raw_queries(dashboard, include_annotations=True, include_variables=True):
        for match in dq.VARIABLE_RE.finditer(q.expr):
            var = next(g for g in match.groups() if g)
            if var in BUILTINS:
                continue
            before = q.expr[:match.start()]
            if not re.search(r'=~\s*"[^"]*$', before):
                lint.error(name, f"{q.panel}: ${var} is not inside a =~ matcher: {q.expr}")


def check_links(lint, dashboard, name, uids):
    for text in strings(dashboard):
        for uid in re.findall(r"/d/([A-Za-z0-9_-]+)", text):
            if uid not in uids:
                lint.error(name, f"link to unknown dashboard uid {uid!r}: {text}")
    if dashboard["uid"] in LEVELS:
        level = LEVELS.index(dashboard["uid"])
        targets = {uid for text in strings(dashboard) for uid in re.findall(r"/d/([A-Za-z0-9_-]+)", text)}
        for neighbour in (level - 1, level + 1):
            if 0 <= neighbour < len(LEVELS) and LEVELS[neighbour] not in targets:
                lint.error(name, f"L{level + 1} does not link to L{neighbour + 1} ({LEVELS[neighbour]})")


def metric_names(expr):
    names = set(re.findall(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{", expr)) - PROMQL_WORDS
    for regex in re.findall(r'__name__\s*=~\s*"([^"]*)"', expr):
        names.add(("regex", regex))
    return names


def check_metrics(lint, queries, recorded, documented):
    for q in queries:
        for metric in metric_names(q.expr):
            if isinstance(metric, tuple):
                if documented is not None and not any(re.fullmatch(metric[1], m) for m in documented):
                    lint.error(q.dashboard, f"{q.panel}: __name__=~{metric[1]!r} matches no documented metric")
            elif ":" in metric:
                if recorded is not None and metric not in recorded:
                    lint.error(q.dashboard, f"{q.panel}: {metric} is not recorded by the mixin's recording rules")
            elif documented is not None and metric not in documented and metric not in EXTERNAL_METRICS:
                lint.error(q.dashboard, f"{q.panel}: metric {metric} is not in docs/metrics.md")


def check_queries_parse(lint, queries, promtool):
    groups = {}
    names = {}
    for i, q in enumerate(queries):
        record = f"dashboard_lint:q{i}"
        names[record] = q
        groups.setdefault(q.uid, []).append((record, dq.substitute(q.expr)))
    lines = ["groups:"]
    for uid, rules in groups.items():
        lines.append(f"  - name: {json.dumps(uid)}")
        lines.append("    rules:")
        for record, expr in rules:
            lines.append(f"      - record: {record}")
            lines.append(f"        expr: {json.dumps(expr)}")  # a JSON string is a valid YAML string
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        result = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if result.returncode != 0:
        output = result.stdout + result.stderr
        failing = set(re.findall(r"dashboard_lint:q\d+", output))
        for record in sorted(failing):
            q = names[record]
            lint.error(q.dashboard, f"{q.panel}: query does not parse: {dq.substitute(q.expr)}")
        lint.error("promtool", output.strip())
    return len(queries)


def check_substitution(lint):
    """The query library replaces every form of variable and leaves no $ behind."""
    expr = 'rate(m{a=~"$x", b=~"${y}", c=~"${z:regex}", d=~"[[w]]"}[$__rate_interval]) * $__range_s'
    got = dq.substitute(expr, {"x": "v1|v2"}, {"__range_s": "60"})
    want = 'rate(m{a=~"v1|v2", b=~".*", c=~".*", d=~".*"}[1m]) * 60'
    if got != want:
        lint.error("dashboard_queries.substitute", f"{got!r} != {want!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dashboards", required=True)
    parser.add_argument("--promtool", required=True)
    parser.add_argument("--recording-rules")
    parser.add_argument("--metrics-doc")
    args = parser.parse_args()

    lint = Lint()
    dashboards = dq.load_dashboards(args.dashboards)
    uids = [d.get("uid") for d in dashboards]
    titles = [d.get("title") for d in dashboards]
    for label, values in (("uid", uids), ("title", titles)):
        if None in values or len(set(values)) != len(values):
            lint.error("dashboards", f"{label}s missing or not unique: {values}")
    for uid in LEVELS:
        if uid not in uids:
            lint.error("dashboards", f"hierarchy dashboard {uid} missing")

    recorded = None
    if args.recording_rules:
        with open(args.recording_rules) as f:
            recorded = set(re.findall(r"^\s*-?\s*record:\s*\"?([A-Za-z_:][A-Za-z0-9_:]*)", f.read(), re.M))
    documented = None
    if args.metrics_doc:
        with open(args.metrics_doc) as f:
            documented = set()
            for name, kind in re.findall(r"^\| `([A-Za-z_:][A-Za-z0-9_:]*)` \| (\w+) \|", f.read(), re.M):
                documented.add(name)
                if kind == "histogram":
                    documented.update(name + suffix for suffix in ("_bucket", "_count", "_sum"))

    queries = []
    for dashboard in dashboards:
        name = dashboard.get("uid")
        if dashboard.get("schemaVersion", 0) < 36:
            lint.error(name, f"schemaVersion {dashboard.get('schemaVersion')} is older than 36")
        check_ids(lint, dashboard, name)
        check_datasources(lint, dashboard, name)
        check_variables(lint, dashboard, name)
        check_links(lint, dashboard, name, set(uids))
        queries.extend(dq.raw_queries(dashboard, include_annotations=True, include_variables=True))
    check_substitution(lint)
    for dashboard in dashboards:
        if not any(True for _ in dq.raw_queries(dashboard)):
            lint.error(dashboard.get("uid"), "has no query")
    for q in queries:
        if "$" in dq.substitute(q.expr):
            lint.error(q.dashboard, f"{q.panel}: a variable is left after substitution: {dq.substitute(q.expr)}")
    check_metrics(lint, queries, recorded, documented)
    count = check_queries_parse(lint, queries, args.promtool)

    if lint.errors:
        print("\n".join(lint.errors))
        print(f"FAIL: {len(lint.errors)} problem(s) in {len(dashboards)} dashboards")
        return 1
    print(f"ok: {len(dashboards)} dashboards, {count} queries parsed by promtool")
    return 0


if __name__ == "__main__":
    sys.exit(main())

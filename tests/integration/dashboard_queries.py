"""Every query of the gpuscope dashboards (deploy/mixin/generated/dashboards/*.json), with the Grafana
template variables substituted, ready to run on a live Prometheus. Standard library only.

    from dashboard_queries import panel_queries
    for dashboard, panel, expr in panel_queries("deploy/mixin/generated/dashboards"):
        ...  # query Prometheus with expr and expect data

Variables a caller does not set become ".*" (Grafana's "All": every query matches them with =~), so a
query covers the whole fleet; Grafana's built-ins ($__rate_interval, $__range, ...) get fixed values.
Run as a script to print the queries: python3 dashboard_queries.py DIR [var=value ...].
"""

import collections
import glob
import json
import os
import re
import sys

# Values of Grafana's built-in variables that can appear in PromQL.
DEFAULT_BUILTINS = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__interval_ms": "15000",
    "__range": "10m",
    "__range_s": "600",
    "__range_ms": "600000",
}

# $name, ${name}, ${name:format}, [[name]]
VARIABLE_RE = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)\]\]")

Query = collections.namedtuple("Query", "dashboard uid panel kind expr")


def load_dashboards(directory):
    """The dashboards of a directory, sorted by file name."""
    dashboards = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as f:
            dashboards.append(json.load(f))
    if not dashboards:
        raise FileNotFoundError(f"no dashboard JSON in {directory}")
    return dashboards


def all_panels(dashboard):
    """Every panel, including those nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def variable_expr(variable):
    """The PromQL selector or expression behind a query variable (label_values(expr, label) or
    query_result(expr)), or None when there is none (label_values(label), other variable types)."""
    if variable.get("type") != "query":
        return None
    query = variable.get("query")
    if isinstance(query, dict):
        query = query.get("query", "")
    query = (query or variable.get("definition", "")).strip()
    match = re.fullmatch(r"label_values\((.*),\s*\w+\s*\)", query, re.S)
    if match:
        return match.group(1)
    match = re.fullmatch(r"query_result\((.*)\)", query, re.S)
    if match:
        return match.group(1)
    return None


def raw_queries(dashboard, include_annotations=True, include_variables=False):
    """(panel title, kind, expr) of every query as written, variables unsubstituted. kind is "target"
    (a panel query), "annotation" or "variable"."""
    uid, title = dashboard.get("uid"), dashboard.get("title")
    for panel in all_panels(dashboard):
        for target in panel.get("targets", []):
            if target.get("expr"):
                yield Query(title, uid, f"{panel.get('title')} [{target.get('refId')}]", "target", target["expr"])
    if include_annotations:
        for annotation in dashboard.get("annotations", {}).get("list", []):
            if annotation.get("expr"):
                yield Query(title, uid, f"annotation: {annotation.get('name')}", "annotation", annotation["expr"])
    if include_variables:
        for variable in dashboard.get("templating", {}).get("list", []):
            expr = variable_expr(variable)
            if expr:
                yield Query(title, uid, f"variable: {variable.get('name')}", "variable", expr)


def variable_names(text):
    """The variable names a string references, built-ins included."""
    return [next(g for g in m.groups() if g) for m in VARIABLE_RE.finditer(text)]


def substitute(expr, values=None, builtins=None):
    """expr with each $variable replaced: values[name] if given, a built-in's value, else ".*"."""
    values = values or {}
    fixed = dict(DEFAULT_BUILTINS, **(builtins or {}))

    def replace(match):
        name = next(g for g in match.groups() if g)
        if name in values:
            return values[name]
        if name in fixed:
            return fixed[name]
        return ".*"

    return VARIABLE_RE.sub(replace, expr)


def panel_queries(directory, values=None, builtins=None, include_annotations=True, include_variables=False):
    """[(dashboard title, panel title, expr)] for every query of every dashboard in directory, variables
    substituted (see substitute())."""
    out = []
    for dashboard in load_dashboards(directory):
        for q in raw_queries(dashboard, include_annotations, include_variables):
            out.append((q.dashboard, q.panel, substitute(q.expr, values, builtins)))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    values = dict(arg.split("=", 1) for arg in argv[2:])
    for dashboard, panel, expr in panel_queries(argv[1], values, include_variables=True):
        print(f"{dashboard}\t{panel}\t{expr}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

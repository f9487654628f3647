#!/usr/bin/env bash
# Generates the gpuscope mixin's files from the jsonnet sources in deploy/mixin/.
#
#   deploy/mixin/generate.sh                     write deploy/mixin/generated/ (commit the result)
#   deploy/mixin/generate.sh --check             exit 1, listing the files, when generated/ is stale
#   deploy/mixin/generate.sh --out DIR [--overrides FILE]
#                                                write a variant into DIR, FILE (a jsonnet object of
#                                                config.libsonnet keys) deep-merged over the config
#
# Output (under generated/ or DIR):
#   prometheus/recording_rules.yaml   prometheus/alerting_rules.yaml   alertmanager/alertmanager.yml
#   dashboards/*.json                 grafana/provisioning/{dashboards,datasources}/*.yaml
# Needs jsonnet (Debian package jsonnet).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode=write
out="$here/generated"
overrides=""
while [ $# -gt 0 ]; do
  case "$1" in
    --check) mode=check ;;
    --out) out="$2"; shift ;;
    --overrides) overrides="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "generate.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ "$mode" = check ] && [ -n "$overrides" ]; then
  echo "generate.sh: --check compares the committed files, which use no overrides" >&2
  exit 2
fi
command -v jsonnet >/dev/null || { echo "generate.sh: jsonnet not found (apt-get install jsonnet)" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
tla=()
[ -n "$overrides" ] && tla=(--tla-code-file "overrides=$overrides")

cd "$here"
mkdir -p "$tmp/prometheus" "$tmp/alertmanager"
jsonnet -S "${tla[@]}" rules.jsonnet >"$tmp/prometheus/recording_rules.yaml"
jsonnet -S "${tla[@]}" alerts.jsonnet >"$tmp/prometheus/alerting_rules.yaml"
jsonnet -S "${tla[@]}" alertmanager.jsonnet >"$tmp/alertmanager/alertmanager.yml"
if [ -f dashboards.jsonnet ]; then
  mkdir -p "$tmp/dashboards"
  jsonnet "${tla[@]}" -m "$tmp/dashboards" dashboards.jsonnet >/dev/null
fi
if [ -f grafana.jsonnet ]; then
  mkdir -p "$tmp/grafana/provisioning/dashboards" "$tmp/grafana/provisioning/datasources"
  jsonnet -S "${tla[@]}" -m "$tmp/grafana/provisioning" grafana.jsonnet >/dev/null
fi

case "$mode" in
  check)
    if diff -r "$tmp" "$out" >/dev/null 2>&1; then
      echo "generate.sh: deploy/mixin/generated is up to date"
      exit 0
    fi
    echo "generate.sh: deploy/mixin/generated is stale; run deploy/mixin/generate.sh and commit the result:" >&2
    diff -rq "$tmp" "$out" >&2 || true
    exit 1
    ;;
  write)
    mkdir -p "$out"
    # Replace the generated folders wholesale so that files of removed dashboards go too.
    for d in prometheus alertmanager dashboards grafana; do
      rm -rf "${out:?}/$d"
      [ -d "$tmp/$d" ] && cp -r "$tmp/$d" "$out/$d"
    done
    echo "generate.sh: wrote $out"
    ;;
esac

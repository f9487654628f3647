#!/usr/bin/env bash
# remote_write encode cost per sample, gpuscope next to Prometheus's own encoder in the same run:
#   ours:   build/bench/bench_remote_write (bench/remote_write_bench.cc): protobuf encoding and snappy apart
#           and together, 1.0 and 2.0, for 2,000 series and a 48-GPU node's GPU families;
#   theirs: BenchmarkBuildWriteRequest and BenchmarkBuildV2WriteRequest of storage/remote in the Prometheus
#           module pinned in scripts/versions.env (their test data: createDummyTimeSeries), run with
#           `go test -bench` in a scratch copy of the module outside the repository (kept between runs, so
#           Go's build cache serves the second one). Their ns/op is normalised to ns/sample with the
#           series count their benchmark builds (instances x the metrics listed in createDummyTimeSeries,
#           one sample each), read from their source.
# Writes one table (and both raw outputs) with the date, load and commit to OUT. Not part of the test run.
# Usage: bench/remote_write_vs_prometheus.sh [BUILD_DIR] [OUT]
# Environment: MIN_TIME (ours, seconds per benchmark, default 1), BENCHTIME (theirs, default 1s),
# PROMETHEUS_BENCH_DIR (the scratch copy; default ${TMPDIR:-/tmp}/gpuscope-prometheus-bench-<version>).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$root/bench/results/remote_write.txt}
# shellcheck source=../scripts/versions.env
source "$root/scripts/versions.env"
bench=$build/bench/bench_remote_write
[ -x "$bench" ] || { echo "remote_write_vs_prometheus: $bench missing (build with -DGPUSCOPE_BENCH=ON)" >&2; exit 1; }
command -v go >/dev/null || { echo "remote_write_vs_prometheus: go missing (scripts/install-deps.sh installs it)" >&2; exit 1; }

module=$PROMETHEUS3_MODULE@$PROMETHEUS3_VERSION
src=$(go env GOMODCACHE)/$module
[ -d "$src" ] || go mod download "$module"
scratch=${PROMETHEUS_BENCH_DIR:-${TMPDIR:-/tmp}/gpuscope-prometheus-bench-$PROMETHEUS3_VERSION}
if [ ! -f "$scratch/go.mod" ]; then
  mkdir -p "$scratch"
  cp -r "$src/." "$scratch/"
  chmod -R u+w "$scratch"
fi
work=$(mktemp -d -t gpuscope-rw-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$bench" --benchmark_min_time="${MIN_TIME:-1}" --benchmark_out="$work/ours.json" --benchmark_out_format=json \
  >"$work/ours.txt" 2>&1
# The module's go.work names directories its zip leaves out: GOWORK=off builds the module on its own.
(cd "$scratch" && GOWORK=off GOFLAGS=-mod=mod go test -run '^$' -bench '^Benchmark(Build|BuildV2)WriteRequest$' \
  -benchmem -benchtime="${BENCHTIME:-1s}" ./storage/remote) >"$work/theirs.txt"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# remote_write encode cost per sample: gpuscope vs Prometheus $PROMETHEUS3_VERSION's own encoder, same run"
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load average before $load_before, after $load_after," \
    "gpuscope $(git -C "$root" rev-parse --short HEAD)"
  echo
  python3 - "$work/ours.json" "$work/theirs.txt" "$scratch/storage/remote/queue_manager_test.go" <<'EOF'
import json, re, sys

ours = json.load(open(sys.argv[1]))["benchmarks"]
theirs = open(sys.argv[2]).read()
source = open(sys.argv[3]).read()

def body(name):
    start = source.index("func " + name + "(")
    end = source.index("\n}\n", start)
    return source[start:end]

# Their series count per sub-benchmark: instances x the metrics createDummyTimeSeries lists.
metrics = body("createDummyTimeSeries").count('labels.FromStrings("__name__"')
series = {}
for bench in ("BenchmarkBuildWriteRequest", "BenchmarkBuildV2WriteRequest"):
    text = body(bench)
    instances = {var: int(n) for var, n in re.findall(r"(\w+) := createDummyTimeSeries\((\d+)\)", text)}
    for name, var in re.findall(r'b\.Run\("([^"]+)", func\(b \*testing\.B\) \{\s*bench\(b, (\w+)\)', text):
        series[bench + "/" + name.replace(" ", "_")] = instances[var] * metrics

rows = []
def cell(x, fmt="%.0f"):
    return "-" if x is None else fmt % x

by = {}
for b in ours:
    if b.get("run_type") == "aggregate":
        continue
    name, arg = b["name"].split("/")[:2]
    by[(name, b.get("label", arg))] = b

def ns(name, shape):
    b = by.get((name, shape))
    return None if b is None else b["per_sample"] * 1e9

def counter(name, shape, key):
    b = by.get((name, shape))
    return None if b is None or key not in b else b[key]

print("| encoder | protocol | input | series | encode ns/sample | snappy ns/sample | total ns/sample | raw B/sample | wire B/sample |")
print("|---|---|---|---|---|---|---|---|---|")
for shape in ("2k", "48gpu"):
    n = counter("BM_Total_V2", shape, "samples")
    if n is None:
        continue
    for proto, body_name in (("2.0", "BM_Encode_V2Body"), ("1.0", "BM_Encode_V1Body")):
        record, body_ns = ns("BM_Encode_Record", shape), ns(body_name, shape)
        encode = None if record is None or body_ns is None else record + body_ns
        suffix = "V2" if proto == "2.0" else "V1"
        print("| gpuscope | %s | %s | %d | %s (record %s + body %s) | %s | %s | %s | %s |" % (
            proto, shape, n, cell(encode), cell(record), cell(body_ns), cell(ns("BM_Compress_" + suffix, shape)),
            cell(ns("BM_Total_" + suffix, shape)), cell(counter("BM_Total_" + suffix, shape, "raw_bytes_per_sample"), "%.1f"),
            cell(counter("BM_Total_" + suffix, shape, "wire_bytes_per_sample"), "%.1f")))
    print("| gpuscope, first interval (empty cache) | record | %s | %d | %s | - | - | - | - |" % (
        shape, n, cell(ns("BM_Encode_RecordColdCache", shape))))
    print("| gpuscope, pre-upgrade 1.0 record sent as 2.0 | 2.0 | %s | %d | - | - | %s | - | %s |" % (
        shape, n, cell(ns("BM_Total_V2FromPreUpgradeRecord", shape)),
        cell(counter("BM_Total_V2FromPreUpgradeRecord", shape, "wire_bytes_per_sample"), "%.1f")))

line = re.compile(r"^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op(.*)$")
for raw in theirs.splitlines():
    m = line.match(raw.strip())
    if not m:
        continue
    name, ns_op, rest = m.group(1), float(m.group(3)), m.group(4)
    n = series.get(name)
    if not n:
        continue
    size = re.search(r"([\d.]+) compressedSize/op", rest)
    proto = "2.0" if "V2" in name else "1.0"
    wire = float(size.group(1)) / n if size else None
    print("| Prometheus %s | %s | %s | %d | - | - | %.0f | - | %s |" % (
        name.split("/")[0].replace("Benchmark", ""), proto, name.split("/", 1)[1], n, ns_op / n, cell(wire, "%.1f")))
EOF
  echo
  echo "## gpuscope (bench_remote_write; per_sample is CPU seconds per sample)"
  echo
  cat "$work/ours.txt"
  echo
  echo "## Prometheus (go test -bench in storage/remote; ns/op is one whole request)"
  echo
  cat "$work/theirs.txt"
} >"$out"
cat "$out"

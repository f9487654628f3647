#!/usr/bin/env bash
# Installs what gpuscope needs to build, test and run its demo: the Debian 12 packages (every one below,
# with why), the project virtual environment (.venv) with the pinned Python packages, the pinned Go
# modules, and the real receivers of the integration tests built from pinned Go modules
# (scripts/build-peers.sh). Every pinned version is in scripts/versions.env. Idempotent: what is present
# is not fetched or built again. Needs root when a Debian package is missing (apt-get).
set -euo pipefail

packages=(
  build-essential          # g++ 12 (C++20) and make
  cmake                    # build system
  ninja-build              # build backend
  pkg-config               # finding libraries
  clang                    # libFuzzer targets (bench/fuzz.sh) and the ASan/UBSan runtime for clang builds
  libfuzzer-14-dev         # libFuzzer driver for the fuzz targets
  clang-format             # the formatting check in the test run
  libgtest-dev             # GoogleTest
  libgmock-dev             # GoogleMock
  libbenchmark-dev         # Google Benchmark (bench/)
  libyaml-cpp-dev          # YAML: agent config, web config, simulator scenarios
  libssl-dev               # TLS for the /metrics endpoint (exporter-toolkit web config)
  zlib1g-dev               # gzip responses
  libcrypt-dev             # bcrypt verification of basic-auth users (libxcrypt)
  libsnappy-dev            # snappy block compression of Loki push and remote_write requests
  libsystemd-dev           # sd-journal: the systemd journal event source (src/events/sources/journal_reader)
  systemd-journal-remote   # writes real .journal files from export-format text in the journal source's tests
  prometheus               # Prometheus + promtool: integration tests (scrape, remote_write receiver) and `promtool check metrics`
  victoria-metrics         # VictoriaMetrics single-node: a second real remote_write 1.0 receiver in the integration tests
  prometheus-alertmanager  # Alertmanager + amtool: the mixin's routes and inhibitions, the demo stack
  jsonnet                  # generates the monitoring mixin (deploy/mixin): rules, alerts, routes, dashboards
  prometheus-node-exporter # peer in the side-by-side benchmark
  munge                    # Slurm's authentication, for the real-Slurm integration tests
  slurmctld                # Slurm controller: attribution and scheduler-collector integration tests
  slurmd                   # Slurm node daemon: runs the test jobs and our prolog/epilog
  slurm-client             # sbatch, squeue, sinfo, scontrol, sdiag, sshare (tests and the collectors)
  wrk                      # HTTP load generator for the endpoint and footprint benchmarks
  linux-perf               # perf: the simulator's and malloc's share of the agent's CPU in bench/agent_footprint.sh
  ccache                   # compiler cache: the test run builds several trees (plain, ASan, TSan) of one source
  curl                     # scraping in scripts and the demo
  apache2-utils            # htpasswd: bcrypt hashes for the basic-auth test fixtures
  openssl                  # self-signed certificates in TLS tests
  python3                  # fallback interpreter for the test helpers' virtual environment (pyenv's is used when on PATH)
  python3-venv             # creates the project virtual environment (.venv) from Debian's python3
  python3-torch            # PyTorch 1.13 (CPU, gloo) for Debian's python3: real DistributedDataParallel training in the training-telemetry tests
  libcurl4-openssl-dev     # libcurl: the push sinks' HTTP client (proxies, HTTP/2, TLS)
  tinyproxy                # a real HTTP proxy (CONNECT and absolute-form) for the push client's proxy tests
  nghttp2-server           # nghttpd: a real HTTP/2 server (ALPN h2) for the push client's HTTP/2 tests
  clang-tidy               # static analysis with the committed .clang-tidy, in the default test run
  libclang-rt-14-dev       # clang's sanitizer runtimes: the ThreadSanitizer build (clang, -Wthread-safety)
  git                      # build revision in gpuscope_build_info
  libgrpc++-dev            # gRPC C++ (1.51): the agent's client of the kubelet's pod-resources API (--kubernetes)
  protobuf-compiler-grpc   # grpc_cpp_plugin: the pod-resources stubs, generated at build time from the upstream api.proto
  protobuf-compiler        # protoc, with the plugin above
  libprotobuf-dev          # protobuf C++ runtime of the generated stubs
  nlohmann-json3-dev       # JSON parsing of the Kubernetes API server's pod and owner answers (--kubernetes)
  libncurses-dev           # ncurses: the terminal UI of `gpuscope top`
  tmux                     # drives `gpuscope top`'s real interactive screen in its integration test (send-keys, capture-pane)
  libcairo2-dev            # cairo: `gpuscope job --plot` draws the job's time series as PNG or SVG
  fonts-dejavu-core        # a font cairo finds through fontconfig for the plot's title, ticks and legend
  gdb                      # bench/agent_footprint.sh: the agent's threads by role, from their backtraces
  help2man                 # the packages' man pages, from gpuscope-agent --help and gpuscope --help
  dpkg-dev                 # dpkg-shlibdeps: the .deb's library dependencies (CPack)
  rpm                      # rpmbuild for the .rpm (CPack) and rpm -qp in its tests
  lintian                  # the .deb checked against Debian's policy in the package tests
  debootstrap              # the clean Debian 12 root the package tests install, upgrade and remove the .deb in
  systemd-container        # systemd-nspawn: boots that root with systemd, so the installed unit runs for real
  libbpf-dev               # libbpf 1.1: loads the agent's CO-RE eBPF programs (--ebpf, src/ebpf)
  libelf-dev               # libelf, which libbpf links against
  bpftool                  # vmlinux.h from the running kernel's BTF and the programs' skeletons, at build time
)

# A machine of the project's kind has Go on PATH; a bare Debian root gets Debian's, enough to fetch modules.
command -v go >/dev/null 2>&1 || packages+=(golang-go)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
elif [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run as root" >&2
  exit 1
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
. "$root/scripts/versions.env"

# The project's virtual environment: the test helpers import only what is pinned there, whatever the
# interpreter on PATH happens to carry. Rebuilt when the pins change.
venv=$root/.venv
stamp="$PYTHON_REQUIREMENTS"
if [ ! -x "$venv/bin/python3" ] || [ "$(cat "$venv/.pins" 2>/dev/null)" != "$stamp" ]; then
  echo "install-deps: creating $venv ($PYTHON_REQUIREMENTS)"
  rm -rf "$venv"
  python3 -m venv "$venv" || /usr/bin/python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install --quiet --disable-pip-version-check $PYTHON_REQUIREMENTS
  printf '%s' "$stamp" >"$venv/.pins"
fi

# Pinned Go modules, into the Go module cache (outside the repository).
for module in "$GO_NVML_MODULE@$GO_NVML_VERSION" "$GO_DCGM_MODULE@$GO_DCGM_VERSION"; do
  if ! go mod download -json "$module" >/dev/null; then
    echo "install-deps: cannot fetch $module from the Go module proxy" >&2
    exit 1
  fi
done

# The real open-source peers of the integration tests (VictoriaLogs, VictoriaMetrics, Prometheus 3, an
# OpenTelemetry Collector, the remote-write compliance suite, the kubelet pod-resources server), built from
# their pinned Go modules once per machine into a cache outside the repository (scripts/build-peers.sh);
# later runs find them there and build nothing.
"$root/scripts/build-peers.sh"

# The clean Debian 12 root of the package tests (debootstrap once per machine, cached beside the peers).
"$root/scripts/make-test-root.sh"

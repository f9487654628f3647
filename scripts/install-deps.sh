#!/usr/bin/env bash
# Installs the Debian 12 packages gpuscope needs to build, test and run its demo. Idempotent: packages
# already installed are not fetched again. Needs root (apt-get). Every package, with why:
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
  libsnappy-dev            # snappy block compression of Loki push requests
  libsystemd-dev           # sd-journal: the systemd journal event source (src/events/sources/journal_reader)
  systemd-journal-remote   # writes real .journal files from export-format text in the journal source's tests
  prometheus               # Prometheus + promtool: integration tests and `promtool check metrics`
  prometheus-alertmanager  # Alertmanager + amtool: the mixin's routes and inhibitions, the demo stack
  jsonnet                  # generates the monitoring mixin (deploy/mixin): rules, alerts, routes, dashboards
  python3-yaml             # reads the mixin's rule and promtool test files in its checks (deploy/mixin/tests)
  prometheus-node-exporter # peer in the side-by-side benchmark
  munge                    # Slurm's authentication, for the real-Slurm integration tests
  slurmctld                # Slurm controller: attribution and scheduler-collector integration tests
  slurmd                   # Slurm node daemon: runs the test jobs and our prolog/epilog
  slurm-client             # sbatch, squeue, sinfo, scontrol, sdiag, sshare (tests and the collectors)
  wrk                      # HTTP load generator for the endpoint benchmark
  curl                     # scraping in scripts and the demo
  apache2-utils            # htpasswd: bcrypt hashes for the basic-auth test fixtures
  openssl                  # self-signed certificates in TLS tests
  python3                  # small test helpers (golden-file normalisation)
  git                      # build revision in gpuscope_build_info
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run as root" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Builds the real open-source peers the integration tests talk to (VictoriaLogs, VictoriaMetrics and its
# vmauth, Prometheus 3, an OpenTelemetry Collector, the remote-write sender compliance suite, our stand-in
# kubelet pod-resources server, our stand-in Kubernetes API server, helm, our Kubernetes object validator and
# Thanos)
# from the Go module versions pinned in scripts/versions.env, once per machine, into
# ${GPUSCOPE_PEERS_CACHE:-$HOME/.cache/gpuscope/peers}/<name>-<version>/.
# A peer already there is left alone, so repeated runs cost nothing; a changed pin builds beside the
# old one. Each build happens in a throwaway module directory (go mod init; go get MODULE@VERSION;
# go build), with the local toolchain and -trimpath; modules come from the Go module proxy into the Go
# module cache and are never vendored. Prints one line per peer: cached, or built with its time.
# Usage: scripts/build-peers.sh [name...]
#   (names: victoria-logs victoria-metrics vmauth prometheus3 otelcol rw-compliance podresources kubeapi helm
#    kubevalidate thanos)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
. "$root/scripts/versions.env"
cache=${GPUSCOPE_PEERS_CACHE:-$HOME/.cache/gpuscope/peers}
mkdir -p "$cache"
export GOTOOLCHAIN=local GOFLAGS="-trimpath -mod=mod"

# The otelcol build recipe is our own source: its cache entry carries a hash of it, so an edited
# main.go builds anew.
otelcol_main=$root/tests/tools/otelcol/main.go
otelcol_key=$OTELCOL_VERSION-$(sha256sum "$otelcol_main" | cut -c1-12)
# Likewise the compliance suite's adapter (a _test.go file built with go test -c).
rwc_test=$root/tests/tools/rw_compliance/compliance_test.go
rwc_key=$RWCOMPLIANCE_VERSION-$(sha256sum "$rwc_test" | cut -c1-12)
# Likewise the pod-resources server, whose key names both pinned modules.
podres_main=$root/tests/tools/podresources/main.go
podres_key=$PODRESOURCES_VERSION-$PODRESOURCES_GRPC_VERSION-$(sha256sum "$podres_main" | cut -c1-12)
# Likewise the Kubernetes object validator, whose key names both pinned API modules.
kubeval_main=$root/tests/tools/kubevalidate/main.go
kubeval_key=$KUBERNETES_GO_VERSION-$KUBEVALIDATE_PROMOP_VERSION-$(sha256sum "$kubeval_main" | cut -c1-12)
# Likewise the API server stand-in.
kubeapi_main=$root/tests/tools/kubeapi/main.go
kubeapi_key=$KUBERNETES_GO_VERSION-$(sha256sum "$kubeapi_main" | cut -c1-12)

# The cache directory of each peer, by name (CMake looks in the same places: cmake/GpuscopePeers.cmake).
peer_dir() {
  case $1 in
    victoria-logs) echo "$cache/victoria-logs-$VICTORIALOGS_VERSION" ;;
    victoria-metrics) echo "$cache/victoria-metrics-$VICTORIAMETRICS_VERSION" ;;
    vmauth) echo "$cache/vmauth-$VICTORIAMETRICS_VERSION" ;;
    prometheus3) echo "$cache/prometheus-$PROMETHEUS3_VERSION" ;;
    otelcol) echo "$cache/otelcol-$otelcol_key" ;;
    rw-compliance) echo "$cache/rw-compliance-$rwc_key" ;;
    podresources) echo "$cache/podresources-$podres_key" ;;
    helm) echo "$cache/helm-$HELM_VERSION" ;;
    kubevalidate) echo "$cache/kubevalidate-$kubeval_key" ;;
    kubeapi) echo "$cache/kubeapi-$kubeapi_key" ;;
    thanos) echo "$cache/thanos-$THANOS_VERSION" ;;
    *) echo "build-peers: unknown peer '$1'" >&2; return 1 ;;
  esac
}

# build_peer NAME: builds NAME in a fresh module directory unless its cache directory is complete.
build_peer() {
  local name=$1 dir tmp work start
  dir=$(peer_dir "$name")
  if [ -f "$dir/.complete" ]; then
    echo "build-peers: $name cached in $dir"
    return 0
  fi
  start=$(date +%s)
  tmp=$(mktemp -d "$cache/.build-$name.XXXXXX")
  work=$tmp/module
  mkdir -p "$work" "$tmp/out"
  # The go tool's chatter goes to a log, shown when the build fails.
  if ! (
    cd "$work"
    go mod init gpuscope.test/peers/"$name" >/dev/null 2>&1
    case $name in
      victoria-logs)
        go get "$VICTORIALOGS_MODULE@$VICTORIALOGS_VERSION"
        go build -o "$tmp/out/victoria-logs" "$VICTORIALOGS_MODULE/app/victoria-logs"
        ;;
      victoria-metrics)
        go get "$VICTORIAMETRICS_MODULE@$VICTORIAMETRICS_VERSION"
        go build -o "$tmp/out/victoria-metrics" "$VICTORIAMETRICS_MODULE/app/victoria-metrics"
        ;;
      vmauth)  # VictoriaMetrics' auth proxy: a receiver that checks bearer tokens, in front of VictoriaMetrics
        go get "$VICTORIAMETRICS_MODULE@$VICTORIAMETRICS_VERSION"
        go build -o "$tmp/out/vmauth" "$VICTORIAMETRICS_MODULE/app/vmauth"
        ;;
      prometheus3)
        go get "$PROMETHEUS3_MODULE@$PROMETHEUS3_VERSION"
        go build -tags "$PROMETHEUS3_BUILD_TAGS" -o "$tmp/out/prometheus" "$PROMETHEUS3_MODULE/cmd/prometheus"
        go build -tags "$PROMETHEUS3_BUILD_TAGS" -o "$tmp/out/promtool" "$PROMETHEUS3_MODULE/cmd/promtool"
        ;;
      otelcol)
        cp "$otelcol_main" main.go
        local core=go.opentelemetry.io/collector contrib=github.com/open-telemetry/opentelemetry-collector-contrib
        go get "$core/otelcol@$OTELCOL_VERSION" "$core/receiver/otlpreceiver@$OTELCOL_VERSION" \
          "$core/service@$OTELCOL_VERSION" "$contrib/exporter/fileexporter@$OTELCOL_VERSION" \
          "$contrib/extension/bearertokenauthextension@$OTELCOL_VERSION" \
          "$core/extension@$OTELCOL_STABLE_VERSION" \
          "$core/component@$OTELCOL_STABLE_VERSION" "$core/confmap@$OTELCOL_STABLE_VERSION" \
          "$core/confmap/provider/fileprovider@$OTELCOL_STABLE_VERSION" \
          "$core/confmap/provider/envprovider@$OTELCOL_STABLE_VERSION" \
          "$core/exporter@$OTELCOL_STABLE_VERSION" "$core/receiver@$OTELCOL_STABLE_VERSION"
        go build -o "$tmp/out/otelcol" .
        # One release for every collector module: a module pulled to another release would mix APIs.
        local strays
        strays=$(go list -m all | awk -v a="$OTELCOL_VERSION" -v b="$OTELCOL_STABLE_VERSION" \
          '$1 ~ /^(go.opentelemetry.io\/collector|github.com\/open-telemetry\/opentelemetry-collector-contrib)/ && $2 != a && $2 != b')
        if [ -n "$strays" ]; then
          echo "build-peers: collector modules outside release $OTELCOL_VERSION/$OTELCOL_STABLE_VERSION:" >&2
          echo "$strays" >&2
          exit 1
        fi
        ;;
      rw-compliance)
        cp "$rwc_test" compliance_test.go
        go get "$RWCOMPLIANCE_MODULE@$RWCOMPLIANCE_VERSION"
        go test -c -o "$tmp/out/rw-compliance.test" .
        # go test -json's converter, so that running the suite needs no go tool.
        go build -o "$tmp/out/test2json" cmd/test2json
        ;;
      podresources)
        cp "$podres_main" main.go
        go get "$PODRESOURCES_MODULE@$PODRESOURCES_VERSION" "google.golang.org/grpc@$PODRESOURCES_GRPC_VERSION"
        go build -o "$tmp/out/gpuscope-podresources" .
        # The server speaks the pinned grpc-go: another module must not have raised it.
        local grpc
        grpc=$(go list -m -f '{{.Version}}' google.golang.org/grpc)
        if [ "$grpc" != "$PODRESOURCES_GRPC_VERSION" ]; then
          echo "build-peers: grpc-go resolved to $grpc, not the pinned $PODRESOURCES_GRPC_VERSION" >&2
          exit 1
        fi
        # The .proto the server was built from, for the tests' own clients (stubs generated at test time).
        cp "$(go list -m -f '{{.Dir}}' "$PODRESOURCES_MODULE")/pkg/apis/podresources/v1/api.proto" "$tmp/out/api.proto"
        ;;
      helm)
        go get "$HELM_MODULE@$HELM_VERSION"
        go build -o "$tmp/out/helm" "$HELM_MODULE/cmd/helm"
        ;;
      kubevalidate)
        cp "$kubeval_main" main.go
        go get "k8s.io/api@$KUBERNETES_GO_VERSION" "k8s.io/apimachinery@$KUBERNETES_GO_VERSION" \
          "k8s.io/client-go@$KUBERNETES_GO_VERSION" "$KUBEVALIDATE_PROMOP_MODULE@$KUBEVALIDATE_PROMOP_VERSION"
        go build -o "$tmp/out/gpuscope-kubevalidate" .
        # The validator decodes into the pinned API types: another module must not have raised them.
        local v
        for v in k8s.io/api k8s.io/apimachinery k8s.io/client-go; do
          if [ "$(go list -m -f '{{.Version}}' "$v")" != "$KUBERNETES_GO_VERSION" ]; then
            echo "build-peers: $v resolved to $(go list -m -f '{{.Version}}' "$v"), not the pinned $KUBERNETES_GO_VERSION" >&2
            exit 1
          fi
        done
        ;;
      kubeapi)
        cp "$kubeapi_main" main.go
        go get "$KUBEAPI_MODULE@$KUBERNETES_GO_VERSION" "k8s.io/apimachinery@$KUBERNETES_GO_VERSION"
        go build -o "$tmp/out/gpuscope-kubeapi" .
        local api
        api=$(go list -m -f '{{.Version}}' "$KUBEAPI_MODULE")
        if [ "$api" != "$KUBERNETES_GO_VERSION" ]; then
          echo "build-peers: $KUBEAPI_MODULE resolved to $api, not the pinned $KUBERNETES_GO_VERSION" >&2
          exit 1
        fi
        ;;
      thanos)  # Receive, Query and Rule of the scale-out store (one binary)
        local r
        for r in $THANOS_REPLACES; do
          go mod edit -replace "$r"
        done
        go get "$THANOS_MODULE@$THANOS_VERSION"
        go build -o "$tmp/out/thanos" "$THANOS_MODULE/cmd/thanos"
        ;;
    esac
  ) >"$tmp/build.log" 2>&1; then
    cat "$tmp/build.log" >&2
    rm -rf "$tmp"
    echo "build-peers: building $name failed" >&2
    return 1
  fi
  rm -rf "$dir"
  mv "$tmp/out" "$dir"
  rm -rf "$tmp"
  touch "$dir/.complete"
  echo "build-peers: $name built in $dir ($(($(date +%s) - start)) s)"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(victoria-logs otelcol prometheus3 victoria-metrics vmauth rw-compliance podresources kubeapi
  helm kubevalidate thanos)
for name in "${names[@]}"; do
  peer_dir "$name" >/dev/null
  build_peer "$name"
done

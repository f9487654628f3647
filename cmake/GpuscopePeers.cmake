# The real open-source peers of the integration tests (VictoriaLogs, VictoriaMetrics and its vmauth,
# Prometheus 3, an OpenTelemetry Collector, the remote-write sender compliance suite, our stand-in kubelet
# pod-resources server and the api.proto it serves, our stand-in Kubernetes API server; helm and our
# Kubernetes object validator for the chart's tests), built by
# scripts/build-peers.sh from the versions pinned in scripts/versions.env into
# ${GPUSCOPE_PEERS_CACHE:-$HOME/.cache/gpuscope/peers}/<name>-<version>/.
# This finds each in the directory of its pinned version only (never one on PATH of another version) and
# requires it like any other tool of the default test run (gpuscope_require_program). Sets:
#   GPUSCOPE_VICTORIALOGS_BIN GPUSCOPE_VICTORIAMETRICS_BIN GPUSCOPE_VMAUTH_BIN GPUSCOPE_PROMETHEUS3_BIN
#   GPUSCOPE_PROMTOOL3_BIN GPUSCOPE_OTELCOL_BIN GPUSCOPE_RWCOMPLIANCE_BIN GPUSCOPE_TEST2JSON_BIN
#   GPUSCOPE_PODRESOURCES_BIN GPUSCOPE_PODRESOURCES_PROTO GPUSCOPE_KUBEAPI_BIN GPUSCOPE_HELM_BIN
#   GPUSCOPE_KUBEVALIDATE_BIN
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scripts/versions.env
                                                               ${PROJECT_SOURCE_DIR}/tests/tools/otelcol/main.go
                                                               ${PROJECT_SOURCE_DIR}/tests/tools/rw_compliance/compliance_test.go
                                                               ${PROJECT_SOURCE_DIR}/tests/tools/podresources/main.go
                                                               ${PROJECT_SOURCE_DIR}/tests/tools/kubevalidate/main.go
                                                               ${PROJECT_SOURCE_DIR}/tests/tools/kubeapi/main.go)
file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/versions.env _gpuscope_peer_pins
     REGEX "^(VICTORIALOGS|VICTORIAMETRICS|PROMETHEUS3|OTELCOL|RWCOMPLIANCE|PODRESOURCES|PODRESOURCES_GRPC|HELM|KUBERNETES_GO|KUBEVALIDATE_PROMOP)_VERSION=")
foreach(_pin IN LISTS _gpuscope_peer_pins)
  string(REGEX MATCH "^([A-Z0-9_]+)_VERSION=(.*)$" _ "${_pin}")
  set(_gpuscope_${CMAKE_MATCH_1}_version "${CMAKE_MATCH_2}")
endforeach()
foreach(_peer VICTORIALOGS VICTORIAMETRICS PROMETHEUS3 OTELCOL RWCOMPLIANCE PODRESOURCES PODRESOURCES_GRPC HELM
              KUBERNETES_GO KUBEVALIDATE_PROMOP)
  if(NOT _gpuscope_${_peer}_version)
    message(FATAL_ERROR "scripts/versions.env does not pin ${_peer}_VERSION")
  endif()
endforeach()

if(DEFINED ENV{GPUSCOPE_PEERS_CACHE})
  set(_gpuscope_peers_cache "$ENV{GPUSCOPE_PEERS_CACHE}")
else()
  set(_gpuscope_peers_cache "$ENV{HOME}/.cache/gpuscope/peers")
endif()
# The otelcol entry carries a hash of its build recipe, as scripts/build-peers.sh names it.
file(SHA256 ${PROJECT_SOURCE_DIR}/tests/tools/otelcol/main.go _gpuscope_otelcol_hash)
string(SUBSTRING "${_gpuscope_otelcol_hash}" 0 12 _gpuscope_otelcol_hash)
file(SHA256 ${PROJECT_SOURCE_DIR}/tests/tools/rw_compliance/compliance_test.go _gpuscope_rwc_hash)
string(SUBSTRING "${_gpuscope_rwc_hash}" 0 12 _gpuscope_rwc_hash)
file(SHA256 ${PROJECT_SOURCE_DIR}/tests/tools/podresources/main.go _gpuscope_podres_hash)
string(SUBSTRING "${_gpuscope_podres_hash}" 0 12 _gpuscope_podres_hash)
set(_gpuscope_podres_key "${_gpuscope_PODRESOURCES_version}-${_gpuscope_PODRESOURCES_GRPC_version}")
string(APPEND _gpuscope_podres_key "-${_gpuscope_podres_hash}")
set(_gpuscope_podres_dir ${_gpuscope_peers_cache}/podresources-${_gpuscope_podres_key})
file(SHA256 ${PROJECT_SOURCE_DIR}/tests/tools/kubevalidate/main.go _gpuscope_kubeval_hash)
string(SUBSTRING "${_gpuscope_kubeval_hash}" 0 12 _gpuscope_kubeval_hash)
set(_gpuscope_kubeval_dir
    ${_gpuscope_peers_cache}/kubevalidate-${_gpuscope_KUBERNETES_GO_version}-${_gpuscope_KUBEVALIDATE_PROMOP_version}-${_gpuscope_kubeval_hash})
file(SHA256 ${PROJECT_SOURCE_DIR}/tests/tools/kubeapi/main.go _gpuscope_kubeapi_hash)
string(SUBSTRING "${_gpuscope_kubeapi_hash}" 0 12 _gpuscope_kubeapi_hash)
set(_gpuscope_kubeapi_dir ${_gpuscope_peers_cache}/kubeapi-${_gpuscope_KUBERNETES_GO_version}-${_gpuscope_kubeapi_hash})

# A path found for another version (the pin changed since the last configure) is looked up again.
function(_gpuscope_require_peer var program dir)
  if(${var} AND NOT ${var} STREQUAL "${dir}/${program}")
    unset(${var} CACHE)
  endif()
  gpuscope_require_program(${var} ${program} NO_DEFAULT_PATH PATHS ${dir})
endfunction()
_gpuscope_require_peer(GPUSCOPE_VICTORIALOGS_BIN victoria-logs
                       ${_gpuscope_peers_cache}/victoria-logs-${_gpuscope_VICTORIALOGS_version})
_gpuscope_require_peer(GPUSCOPE_VICTORIAMETRICS_BIN victoria-metrics
                       ${_gpuscope_peers_cache}/victoria-metrics-${_gpuscope_VICTORIAMETRICS_version})
_gpuscope_require_peer(GPUSCOPE_VMAUTH_BIN vmauth
                       ${_gpuscope_peers_cache}/vmauth-${_gpuscope_VICTORIAMETRICS_version})
_gpuscope_require_peer(GPUSCOPE_PROMETHEUS3_BIN prometheus
                       ${_gpuscope_peers_cache}/prometheus-${_gpuscope_PROMETHEUS3_version})
_gpuscope_require_peer(GPUSCOPE_PROMTOOL3_BIN promtool
                       ${_gpuscope_peers_cache}/prometheus-${_gpuscope_PROMETHEUS3_version})
_gpuscope_require_peer(GPUSCOPE_OTELCOL_BIN otelcol
                       ${_gpuscope_peers_cache}/otelcol-${_gpuscope_OTELCOL_version}-${_gpuscope_otelcol_hash})
_gpuscope_require_peer(GPUSCOPE_RWCOMPLIANCE_BIN rw-compliance.test
                       ${_gpuscope_peers_cache}/rw-compliance-${_gpuscope_RWCOMPLIANCE_version}-${_gpuscope_rwc_hash})
_gpuscope_require_peer(GPUSCOPE_TEST2JSON_BIN test2json
                       ${_gpuscope_peers_cache}/rw-compliance-${_gpuscope_RWCOMPLIANCE_version}-${_gpuscope_rwc_hash})
_gpuscope_require_peer(GPUSCOPE_PODRESOURCES_BIN gpuscope-podresources ${_gpuscope_podres_dir})
_gpuscope_require_peer(GPUSCOPE_HELM_BIN helm ${_gpuscope_peers_cache}/helm-${_gpuscope_HELM_version})
_gpuscope_require_peer(GPUSCOPE_KUBEVALIDATE_BIN gpuscope-kubevalidate ${_gpuscope_kubeval_dir})
_gpuscope_require_peer(GPUSCOPE_KUBEAPI_BIN gpuscope-kubeapi ${_gpuscope_kubeapi_dir})
# The kubelet's api.proto, copied there from the module the server was built with.
if(GPUSCOPE_PODRESOURCES_PROTO AND NOT GPUSCOPE_PODRESOURCES_PROTO STREQUAL "${_gpuscope_podres_dir}/api.proto")
  unset(GPUSCOPE_PODRESOURCES_PROTO CACHE)
endif()
find_file(GPUSCOPE_PODRESOURCES_PROTO api.proto NO_DEFAULT_PATH PATHS ${_gpuscope_podres_dir})

# Thanos (Receive, Query and Rule in one binary; issue 15's scale-out store and deploy/thanos): sets
# GPUSCOPE_THANOS_BIN.
file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/versions.env _gpuscope_thanos_pin REGEX "^THANOS_VERSION=")
string(REGEX REPLACE "^THANOS_VERSION=" "" _gpuscope_thanos_version "${_gpuscope_thanos_pin}")
if(NOT _gpuscope_thanos_version)
  message(FATAL_ERROR "scripts/versions.env does not pin THANOS_VERSION")
endif()
_gpuscope_require_peer(GPUSCOPE_THANOS_BIN thanos ${_gpuscope_peers_cache}/thanos-${_gpuscope_thanos_version})

# The clean Debian 12 root of the package tests (scripts/make-test-root.sh, keyed like the peers by what
# makes it): sets GPUSCOPE_DEBIAN_TEST_ROOT to its root.tar.
file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/versions.env _gpuscope_root_pins REGEX "^DEBIAN_TEST_ROOT_[A-Z]+=")
foreach(_pin IN LISTS _gpuscope_root_pins)
  string(REGEX MATCH "^DEBIAN_TEST_ROOT_([A-Z]+)=(.*)$" _ "${_pin}")
  set(_gpuscope_root_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
endforeach()
string(SHA256 _gpuscope_root_key "${_gpuscope_root_SUITE} ${_gpuscope_root_MIRROR} ${_gpuscope_root_PACKAGES}")
string(SUBSTRING "${_gpuscope_root_key}" 0 12 _gpuscope_root_key)
set(_gpuscope_root_dir ${_gpuscope_peers_cache}/debian-root-${_gpuscope_root_SUITE}-${_gpuscope_root_key})
if(GPUSCOPE_DEBIAN_TEST_ROOT AND NOT GPUSCOPE_DEBIAN_TEST_ROOT STREQUAL "${_gpuscope_root_dir}/root.tar")
  unset(GPUSCOPE_DEBIAN_TEST_ROOT CACHE)
endif()
find_file(GPUSCOPE_DEBIAN_TEST_ROOT root.tar NO_DEFAULT_PATH PATHS ${_gpuscope_root_dir})
if(NOT GPUSCOPE_DEBIAN_TEST_ROOT)
  if(GPUSCOPE_ALLOW_MISSING_TOOLS)
    message(WARNING "the Debian test root is missing (${_gpuscope_root_dir}): the package install test is not registered")
  else()
    message(FATAL_ERROR "the Debian test root is missing (${_gpuscope_root_dir}): run scripts/install-deps.sh "
                        "(scripts/make-test-root.sh), or configure with -DGPUSCOPE_ALLOW_MISSING_TOOLS=ON")
  endif()
endif()

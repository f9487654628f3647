# Integration tests of the monitoring mixin (issue 6) on real Prometheus and Alertmanager (Debian packages,
# loopback) against a simulated fleet (fleet.py). The alerting test uses the fast variant of the mixin
# (fast_mixin.libsonnet: every for:/window in seconds), generated into the build tree by a fixture.
# Included from tests/integration/CMakeLists.txt.
gpuscope_require_program(ALERTMANAGER_BIN prometheus-alertmanager)
gpuscope_require_program(JSONNET_BIN jsonnet)
if(PROMETHEUS_BIN AND ALERTMANAGER_BIN AND JSONNET_BIN)
  set(GPUSCOPE_FAST_MIXIN_DIR ${CMAKE_BINARY_DIR}/mixin-fast)
  add_test(NAME integration_mixin_fast_variant
           COMMAND ${PROJECT_SOURCE_DIR}/deploy/mixin/generate.sh --out ${GPUSCOPE_FAST_MIXIN_DIR}
                   --overrides ${CMAKE_CURRENT_LIST_DIR}/fast_mixin.libsonnet)
  set_tests_properties(integration_mixin_fast_variant PROPERTIES LABELS integration TIMEOUT 300
                       FIXTURES_SETUP mixin_fast)

  gpuscope_add_python_test(integration_alerting ${CMAKE_CURRENT_LIST_DIR}/alerting_test.py
    ARGS $<TARGET_FILE:gpuscope-agent> ${CMAKE_BINARY_DIR}/sim/libnvidia-ml.so.1 ${GPUSCOPE_FAST_MIXIN_DIR}
    LABELS integration TIMEOUT 400 PROPERTIES FIXTURES_REQUIRED mixin_fast)

  # The dashboards read recording rules by name, and the names carry the windows: the committed rules.
  gpuscope_add_python_test(integration_dashboards ${CMAKE_CURRENT_LIST_DIR}/dashboards_test.py
    ARGS $<TARGET_FILE:gpuscope-agent> ${CMAKE_BINARY_DIR}/sim/libnvidia-ml.so.1 LABELS integration TIMEOUT 400)
endif()

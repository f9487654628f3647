# Integration tests of the monitoring mixin (issue 6) on real Prometheus and Alertmanager (Debian packages,
# loopback) against a simulated fleet (fleet.py). The alerting test uses the fast variant of the mixin
# (fast_mixin.libsonnet: every for:/window in seconds), generated into the build tree by a fixture.
# Included from tests/integration/CMakeLists.txt.
find_program(ALERTMANAGER_BIN prometheus-alertmanager)
find_program(JSONNET_BIN jsonnet)
if(PROMETHEUS_BIN AND ALERTMANAGER_BIN AND JSONNET_BIN)
  set(GPUSCOPE_FAST_MIXIN_DIR ${CMAKE_BINARY_DIR}/mixin-fast)
  add_test(NAME integration_mixin_fast_variant
           COMMAND ${PROJECT_SOURCE_DIR}/deploy/mixin/generate.sh --out ${GPUSCOPE_FAST_MIXIN_DIR}
                   --overrides ${CMAKE_CURRENT_LIST_DIR}/fast_mixin.libsonnet)
  set_tests_properties(integration_mixin_fast_variant PROPERTIES LABELS integration TIMEOUT 300
                       FIXTURES_SETUP mixin_fast)

  add_test(NAME integration_alerting
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/alerting_test.py
                   $<TARGET_FILE:gpuscope-agent> ${CMAKE_BINARY_DIR}/sim/libnvidia-ml.so.1 ${GPUSCOPE_FAST_MIXIN_DIR})
  set_tests_properties(integration_alerting PROPERTIES LABELS integration TIMEOUT 400 FIXTURES_REQUIRED mixin_fast)

  # The dashboards read recording rules by name, and the names carry the windows: the committed rules.
  add_test(NAME integration_dashboards
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/dashboards_test.py
                   $<TARGET_FILE:gpuscope-agent> ${CMAKE_BINARY_DIR}/sim/libnvidia-ml.so.1)
  set_tests_properties(integration_dashboards PROPERTIES LABELS integration TIMEOUT 400)
else()
  message(WARNING "prometheus, prometheus-alertmanager or jsonnet not found: the mixin's integration tests are "
                  "not registered (run scripts/install-deps.sh)")
endif()

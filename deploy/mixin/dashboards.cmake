# Tests of the mixin's Grafana dashboards (included from deploy/mixin/mixin.cmake; label component).
# dashboard_lint.py checks the committed dashboards (generate.sh --check keeps them equal to the jsonnet):
# unique panel ids, ${datasource} references, variables defined and used, every query parsed by promtool,
# recorded series written by the recording rules, metrics documented, links between levels resolving.
gpuscope_require_program(PROMTOOL_BIN promtool)
if(PROMTOOL_BIN)
  add_test(NAME mixin_dashboards_lint
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/component/dashboard_lint.py
                   --dashboards ${PROJECT_SOURCE_DIR}/deploy/mixin/generated/dashboards
                   --recording-rules ${PROJECT_SOURCE_DIR}/deploy/mixin/generated/prometheus/recording_rules.yaml
                   --metrics-doc ${PROJECT_SOURCE_DIR}/docs/metrics.md
                   --promtool ${PROMTOOL_BIN})
  set_tests_properties(mixin_dashboards_lint PROPERTIES LABELS component TIMEOUT 120)
endif()

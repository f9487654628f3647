# Tests of the monitoring mixin (deploy/mixin), label component. Included from tests/component.
# Needs jsonnet, promtool, amtool and prometheus-alertmanager (scripts/install-deps.sh), and PyYAML.
set(GPUSCOPE_MIXIN_DIR ${PROJECT_SOURCE_DIR}/deploy/mixin)
gpuscope_require_program(GPUSCOPE_JSONNET jsonnet)
gpuscope_require_program(GPUSCOPE_PROMTOOL promtool)
gpuscope_require_program(GPUSCOPE_AMTOOL amtool)
if(NOT GPUSCOPE_JSONNET OR NOT GPUSCOPE_PROMTOOL OR NOT GPUSCOPE_AMTOOL)
  return()
endif()

# The committed generated files are what the jsonnet sources produce.
add_test(NAME mixin_generated_files_are_current COMMAND ${GPUSCOPE_MIXIN_DIR}/generate.sh --check)

add_test(NAME mixin_rules_pass_promtool_check
         COMMAND ${GPUSCOPE_PROMTOOL} check rules
                 ${GPUSCOPE_MIXIN_DIR}/generated/prometheus/recording_rules.yaml
                 ${GPUSCOPE_MIXIN_DIR}/generated/prometheus/alerting_rules.yaml)
add_test(NAME mixin_rules_pass_promtool_unit_tests
         COMMAND ${GPUSCOPE_PROMTOOL} test rules
                 ${GPUSCOPE_MIXIN_DIR}/tests/hardware.yaml ${GPUSCOPE_MIXIN_DIR}/tests/agent.yaml
                 ${GPUSCOPE_MIXIN_DIR}/tests/utilisation.yaml ${GPUSCOPE_MIXIN_DIR}/tests/capacity.yaml
                 ${GPUSCOPE_MIXIN_DIR}/tests/inference.yaml ${GPUSCOPE_MIXIN_DIR}/tests/recording.yaml
                 ${GPUSCOPE_MIXIN_DIR}/tests/events.yaml)
add_test(NAME mixin_alertmanager_config_passes_amtool
         COMMAND ${GPUSCOPE_AMTOOL} check-config ${GPUSCOPE_MIXIN_DIR}/generated/alertmanager/alertmanager.yml)
add_test(NAME mixin_every_alert_has_firing_and_quiet_tests
         COMMAND ${Python3_EXECUTABLE} ${GPUSCOPE_MIXIN_DIR}/tests/check_mixin.py alert-tests)
add_test(NAME mixin_every_alert_has_labels_annotations_and_runbook
         COMMAND ${Python3_EXECUTABLE} ${GPUSCOPE_MIXIN_DIR}/tests/check_mixin.py metadata)
add_test(NAME mixin_alerts_route_to_their_team_and_severity
         COMMAND ${Python3_EXECUTABLE} ${GPUSCOPE_MIXIN_DIR}/tests/check_mixin.py routes)
add_test(NAME mixin_alertmanager_inhibits_and_delivers
         COMMAND ${Python3_EXECUTABLE} ${GPUSCOPE_MIXIN_DIR}/tests/check_mixin.py inhibitions)
# The site check refuses placeholders and the demo's URLs (the committed files carry the placeholders).
gpuscope_add_python_test(mixin_site_check_refuses_placeholders_and_demo_urls
  ${GPUSCOPE_MIXIN_DIR}/tests/check_site_test.py LABELS component)
set_tests_properties(
  mixin_generated_files_are_current mixin_rules_pass_promtool_check mixin_rules_pass_promtool_unit_tests
  mixin_alertmanager_config_passes_amtool mixin_every_alert_has_firing_and_quiet_tests
  mixin_every_alert_has_labels_annotations_and_runbook mixin_alerts_route_to_their_team_and_severity
  mixin_alertmanager_inhibits_and_delivers
  PROPERTIES LABELS component TIMEOUT 300)

# The dashboards' own tests (DASHBOARDS helper).
if(EXISTS ${GPUSCOPE_MIXIN_DIR}/dashboards.cmake)
  include(${GPUSCOPE_MIXIN_DIR}/dashboards.cmake)
endif()

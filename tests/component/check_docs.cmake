# Fails when docs/metrics.md differs from what the agent generates from its collectors' descriptions.
execute_process(COMMAND ${AGENT} --print-metrics-docs OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpuscope-agent --print-metrics-docs failed: ${rc}")
endif()
file(READ ${DOCS} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "docs/metrics.md is stale: run  build/src/agent/gpuscope-agent --print-metrics-docs > docs/metrics.md")
endif()

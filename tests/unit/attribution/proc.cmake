# Tests of ProcResolver (src/attribution/proc.cmake) against tests/fixtures/proc/ and the real /proc.
gpuscope_add_test(attribution_proc_resolver_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/proc_resolver_test.cc
  LIBS gpuscope_attribution_proc gpuscope_parsers_proc)
target_compile_definitions(attribution_proc_resolver_test PRIVATE GPUSCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

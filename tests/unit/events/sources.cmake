# Tests of the event sources: kmsg record parser and reader, glob file tailer.
gpuscope_add_test(events_sources_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/sources_kmsg_test.cc ${CMAKE_CURRENT_LIST_DIR}/sources_file_tailer_test.cc
  LIBS gpuscope_events_sources)

gpuscope_add_fuzz_target(events_sources_kmsg_fuzz ${CMAKE_CURRENT_LIST_DIR}/sources_kmsg_fuzz.cc
  ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/kmsg_record LIBS gpuscope_events_sources)

# The journal source against real .journal files written by systemd-journal-remote.
gpuscope_add_test(events_sources_journal_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/sources_journal_test.cc
  LIBS gpuscope_events_journal gpuscope_platform_command)
target_compile_definitions(events_sources_journal_test PRIVATE
  GPUSCOPE_JOURNAL_FIXTURE="${PROJECT_SOURCE_DIR}/tests/fixtures/journal/gpu_node.export")

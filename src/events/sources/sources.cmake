# Event sources: the /dev/kmsg reader (with its pure record parser) and the glob file tailer.
add_library(gpuscope_events_sources
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_record.cc
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/file_tailer.cc)
target_link_libraries(gpuscope_events_sources PUBLIC gpuscope_core gpuscope_platform_file)

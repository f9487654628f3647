# Event sources (EventSource, src/events/event_source.h): /dev/kmsg (the reader with its pure record
# parser) and the glob file tailer.
add_library(gpuscope_events_sources
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_record.cc
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_source.cc
  ${CMAKE_CURRENT_LIST_DIR}/file_tailer.cc
  ${CMAKE_CURRENT_LIST_DIR}/file_source.cc)
target_link_libraries(gpuscope_events_sources PUBLIC gpuscope_core gpuscope_platform_file)

# The systemd journal source, a library of its own so that only what reads the journal links libsystemd.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBSYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
add_library(gpuscope_events_journal ${CMAKE_CURRENT_LIST_DIR}/journal_reader.cc
            ${CMAKE_CURRENT_LIST_DIR}/journal_source.cc)
target_link_libraries(gpuscope_events_journal PUBLIC gpuscope_core gpuscope_platform_file
                      PRIVATE PkgConfig::LIBSYSTEMD)

# Every source above, for the agent's registry (src/agent/event_registry.cc): a new source adds its library
# here and its entry there.
add_library(gpuscope_events_builtin_sources INTERFACE)
target_link_libraries(gpuscope_events_builtin_sources INTERFACE gpuscope_events_sources gpuscope_events_journal)

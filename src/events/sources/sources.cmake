# Event sources: the /dev/kmsg reader (with its pure record parser) and the glob file tailer.
add_library(gpuscope_events_sources
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_record.cc
  ${CMAKE_CURRENT_LIST_DIR}/kmsg_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/file_tailer.cc)
target_link_libraries(gpuscope_events_sources PUBLIC gpuscope_core gpuscope_platform_file)

# The systemd journal source, a library of its own so that only what reads the journal links libsystemd.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBSYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
add_library(gpuscope_events_journal ${CMAKE_CURRENT_LIST_DIR}/journal_reader.cc)
target_link_libraries(gpuscope_events_journal PUBLIC gpuscope_core gpuscope_platform_file
                      PRIVATE PkgConfig::LIBSYSTEMD)

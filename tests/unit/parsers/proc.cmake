# Tests of the /proc parsers (src/parsers/proc.cmake) and their fuzz targets with committed seed corpora.
gpuscope_add_test(parsers_proc_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/proc_cgroup_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/proc_environ_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/proc_stat_test.cc
  LIBS gpuscope_parsers_proc)

foreach(target cgroup environ stat)
  gpuscope_add_fuzz_target(proc_${target}_fuzz ${CMAKE_CURRENT_LIST_DIR}/proc_${target}_fuzz.cc
                           ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/proc_${target} LIBS gpuscope_parsers_proc)
endforeach()

include(GoogleTest)

# gpuscope_add_test(NAME SOURCES... LIBS ...): a GoogleTest binary registered with CTest.
function(gpuscope_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest_main Threads::Threads)
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS unit)
endfunction()

# gpuscope_add_fuzz_target(NAME SOURCE CORPUS_DIR LIBS ...): with GPUSCOPE_FUZZ a libFuzzer binary;
# otherwise the same entry point linked with a replay main that runs every file of the committed corpus,
# registered as a test, so the corpus (crash reproducers included) runs in every default test run.
function(gpuscope_add_fuzz_target name source corpus)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  if(GPUSCOPE_FUZZ)
    add_executable(${name} ${source})
    target_link_libraries(${name} PRIVATE ${ARG_LIBS})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(${name} ${source} ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_main.cc)
    target_link_libraries(${name} PRIVATE ${ARG_LIBS})
    add_test(NAME ${name}_corpus_replay COMMAND ${name} ${corpus})
    set_tests_properties(${name}_corpus_replay PROPERTIES LABELS fuzz-replay)
  endif()
endfunction()

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

# gpuscope_require_program(VAR NAME... [PATHS ...]): find_program for a program the default test run needs.
# A missing one stops the configure step, so that its tests are never dropped with only a warning;
# -DGPUSCOPE_ALLOW_MISSING_TOOLS=ON (never in scripts/test.sh) turns that into a warning.
function(gpuscope_require_program var)
  find_program(${var} ${ARGN})
  if(NOT ${var})
    if(GPUSCOPE_ALLOW_MISSING_TOOLS)
      message(WARNING "${ARGV1} not found: the tests that need it are not registered")
    else()
      message(FATAL_ERROR "${ARGV1} not found: the default test run needs it (run scripts/install-deps.sh, "
                          "or configure with -DGPUSCOPE_ALLOW_MISSING_TOOLS=ON to leave its tests out)")
    endif()
  endif()
endfunction()

# gpuscope_add_python_test(NAME SCRIPT [ARGS ...] LABELS ... [TIMEOUT s] [PROPERTIES ...]): a Python
# unittest script on the project's interpreter. The script ends with tests/tools/unittest_main.py's
# main(), which exits 77 when every case skipped (no root, no Slurm, ...): CTest shows that as a skip,
# not as a pass.
function(gpuscope_add_python_test name script)
  cmake_parse_arguments(ARG "" "TIMEOUT" "ARGS;LABELS;PROPERTIES" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${Python3_EXECUTABLE} ${script} ${ARG_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT} SKIP_RETURN_CODE 77
                                          ${ARG_PROPERTIES})
endfunction()

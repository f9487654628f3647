# Tests of the jobs-family classifiers (src/events/classifiers/jobs.cmake).
gpuscope_add_test(events_jobs_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/jobs_classifier_test.cc
                  LIBS gpuscope_events_jobs)
target_compile_definitions(events_jobs_test
                           PRIVATE GPUSCOPE_JOBS_FIXTURES="${PROJECT_SOURCE_DIR}/tests/fixtures/events/jobs")
gpuscope_add_fuzz_target(events_jobs_fuzz ${CMAKE_CURRENT_LIST_DIR}/jobs_fuzz.cc
                         ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/events_jobs LIBS gpuscope_events_jobs)

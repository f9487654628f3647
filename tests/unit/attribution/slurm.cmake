gpuscope_add_test(slurm_job_source_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/slurm_job_source_test.cc
                  LIBS gpuscope_attribution_slurm)
target_compile_definitions(slurm_job_source_test
                           PRIVATE GPUSCOPE_SLURM_TESTDATA="${PROJECT_SOURCE_DIR}/tests/unit/parsers/testdata")

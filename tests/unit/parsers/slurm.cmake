gpuscope_add_test(slurm_scontrol_job_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/slurm_scontrol_job_test.cc
                  LIBS gpuscope_parsers_slurm)
target_compile_definitions(slurm_scontrol_job_test
                           PRIVATE GPUSCOPE_SLURM_TESTDATA="${CMAKE_CURRENT_LIST_DIR}/testdata")
gpuscope_add_fuzz_target(slurm_scontrol_job_fuzz ${CMAKE_CURRENT_LIST_DIR}/slurm_scontrol_job_fuzz.cc
                         ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/slurm_scontrol_job LIBS gpuscope_parsers_slurm)

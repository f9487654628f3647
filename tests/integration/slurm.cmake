# Real single-node Slurm 22.05 (Debian packages munge, slurmctld, slurmd, slurm-client) on loopback:
# the harness's self-test. Needs root; skipped (reported as passed with a skip message) otherwise.
find_program(SLURMCTLD_BIN slurmctld PATHS /usr/sbin)
find_program(SLURMD_BIN slurmd PATHS /usr/sbin)
find_program(MUNGED_BIN munged PATHS /usr/sbin)
if(SLURMCTLD_BIN AND SLURMD_BIN AND MUNGED_BIN)
  add_test(NAME integration_slurm_harness
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/slurm_harness_test.py)
  set_tests_properties(integration_slurm_harness PROPERTIES LABELS integration TIMEOUT 180 RUN_SERIAL TRUE)
else()
  message(WARNING "slurmctld/slurmd/munged not found: the Slurm integration tests are not registered")
endif()

# The attribution layer end to end on that Slurm: prolog/epilog, mapping files, /proc, scontrol.
if(SLURMCTLD_BIN AND SLURMD_BIN AND MUNGED_BIN)
  add_test(NAME integration_slurm_attribution
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/slurm_attribution_test.py
                   $<TARGET_FILE:gpuscope-agent> ${CMAKE_BINARY_DIR}/sim/libnvidia-ml.so.1 ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration_slurm_attribution PROPERTIES LABELS integration TIMEOUT 600 RUN_SERIAL TRUE)
endif()

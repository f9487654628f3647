# The Slurm scheduler collector on a real single-node Slurm 22.05 (needs root; skipped otherwise), through
# its probe binary (tests/unit/collectors/slurm/slurm_scheduler_probe.cc).
find_program(SLURMCTLD_BIN slurmctld PATHS /usr/sbin)
find_program(SLURMD_BIN slurmd PATHS /usr/sbin)
find_program(MUNGED_BIN munged PATHS /usr/sbin)
if(SLURMCTLD_BIN AND SLURMD_BIN AND MUNGED_BIN AND TARGET slurm_scheduler_probe)
  add_test(NAME integration_slurm_scheduler
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/slurm_scheduler_test.py
                   $<TARGET_FILE:slurm_scheduler_probe>)
  set_tests_properties(integration_slurm_scheduler PROPERTIES LABELS integration TIMEOUT 300 RUN_SERIAL TRUE)
endif()

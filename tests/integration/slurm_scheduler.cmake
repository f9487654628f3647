# The Slurm scheduler collector on a real single-node Slurm 22.05 (needs root; skipped otherwise), through
# its probe binary (tests/unit/collectors/slurm/slurm_scheduler_probe.cc). slurm.cmake requires the programs.
if(SLURMCTLD_BIN AND SLURMD_BIN AND MUNGED_BIN AND TARGET slurm_scheduler_probe)
  gpuscope_add_python_test(integration_slurm_scheduler ${CMAKE_CURRENT_LIST_DIR}/slurm_scheduler_test.py
    ARGS $<TARGET_FILE:slurm_scheduler_probe> LABELS integration TIMEOUT 300 PROPERTIES RUN_SERIAL TRUE)
endif()

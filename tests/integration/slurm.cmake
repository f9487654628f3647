# Real single-node Slurm 22.05 (Debian packages munge, slurmctld, slurmd, slurm-client) on loopback:
# the harness's self-test. Needs root: without it every case skips and CTest shows the test as skipped.
gpuscope_require_program(SLURMCTLD_BIN slurmctld PATHS /usr/sbin)
gpuscope_require_program(SLURMD_BIN slurmd PATHS /usr/sbin)
gpuscope_require_program(MUNGED_BIN munged PATHS /usr/sbin)
if(SLURMCTLD_BIN AND SLURMD_BIN AND MUNGED_BIN)
  gpuscope_add_python_test(integration_slurm_harness ${CMAKE_CURRENT_LIST_DIR}/slurm_harness_test.py
    LABELS integration TIMEOUT 180 PROPERTIES RUN_SERIAL TRUE)

  # The attribution layer end to end on that Slurm: prolog/epilog, mapping files, /proc, scontrol.
  gpuscope_add_python_test(integration_slurm_attribution ${CMAKE_CURRENT_LIST_DIR}/slurm_attribution_test.py
    ARGS $<TARGET_FILE:gpuscope-agent> ${CMAKE_BINARY_DIR}/sim/libnvidia-ml.so.1 ${PROJECT_SOURCE_DIR}
    LABELS integration TIMEOUT 600 PROPERTIES RUN_SERIAL TRUE)
endif()

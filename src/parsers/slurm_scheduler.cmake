# Parsers of squeue / sinfo / sdiag / sshare output (the Slurm scheduler collector).
add_library(gpuscope_parsers_slurm_scheduler ${CMAKE_CURRENT_LIST_DIR}/slurm_scheduler.cc)
target_link_libraries(gpuscope_parsers_slurm_scheduler PUBLIC gpuscope_core)

# Parser of Slurm's `scontrol show job -o` output (the Slurm source of attribution).
add_library(gpuscope_parsers_slurm ${CMAKE_CURRENT_LIST_DIR}/scontrol_job.cc)
target_link_libraries(gpuscope_parsers_slurm PUBLIC gpuscope_core)

# The Slurm source of the JobTable: scontrol, cached, off the scrape path.
add_library(gpuscope_attribution_slurm ${CMAKE_CURRENT_LIST_DIR}/slurm_job_source.cc)
target_link_libraries(gpuscope_attribution_slurm PUBLIC gpuscope_attribution_core gpuscope_parsers_slurm
                                                        Threads::Threads)

# The Slurm source of the JobTable: scontrol, cached, off the scrape path.
add_library(gpuscope_attribution_slurm ${CMAKE_CURRENT_LIST_DIR}/slurm_job_source.cc)
target_link_libraries(gpuscope_attribution_slurm PUBLIC gpuscope_node gpuscope_parsers_slurm
                                                        Threads::Threads)
# RunCommandWithTimeout lives in src/platform/command.cmake (included here too until the platform
# CMakeLists includes it; the include is guarded).
include(${PROJECT_SOURCE_DIR}/src/platform/command.cmake)
target_link_libraries(gpuscope_attribution_slurm PUBLIC gpuscope_platform_command)

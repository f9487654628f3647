# Attribution of GPU processes to Slurm jobs through /proc (cgroup, environ, stat, status).
add_library(gpuscope_attribution_proc ${CMAKE_CURRENT_LIST_DIR}/proc_resolver.cc)
target_link_libraries(gpuscope_attribution_proc PUBLIC gpuscope_node gpuscope_parsers_proc gpuscope_platform_file)

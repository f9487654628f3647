# Parsers of /proc/<pid>/{cgroup,environ,stat,status} for attribution of GPU processes to Slurm jobs.
add_library(gpuscope_parsers_proc
  ${CMAKE_CURRENT_LIST_DIR}/proc_cgroup.cc
  ${CMAKE_CURRENT_LIST_DIR}/proc_environ.cc
  ${CMAKE_CURRENT_LIST_DIR}/proc_stat.cc
)
target_link_libraries(gpuscope_parsers_proc PUBLIC gpuscope_core)

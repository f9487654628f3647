# The mapping-directory source of the JobTable (inotify watch of --hpc-job-mapping-dir).
add_library(gpuscope_attribution_mapping ${CMAKE_CURRENT_LIST_DIR}/mapping_dir_source.cc)
target_link_libraries(gpuscope_attribution_mapping PUBLIC gpuscope_node gpuscope_parsers_mapping
  gpuscope_platform_file)

# Job mapping files left by Slurm prologs: dcgm-exporter, Princeton jobstats, AMD exporter, gpuscope record.
add_library(gpuscope_parsers_mapping ${CMAKE_CURRENT_LIST_DIR}/mapping_files.cc)
target_link_libraries(gpuscope_parsers_mapping PUBLIC gpuscope_core)

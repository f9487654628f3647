# Tests of the mapping-directory source (real inotify on temp dirs) and of deploy/slurm/{prolog,epilog}.sh.
gpuscope_add_test(attribution_mapping_dir_source_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/mapping_dir_source_test.cc
  LIBS gpuscope_attribution_mapping)
target_compile_definitions(attribution_mapping_dir_source_test PRIVATE
  GPUSCOPE_MAPPING_FIXTURES="${PROJECT_SOURCE_DIR}/tests/fixtures/mapping")

gpuscope_add_test(attribution_mapping_prolog_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/mapping_prolog_test.cc
  LIBS gpuscope_parsers_mapping)
target_compile_definitions(attribution_mapping_prolog_test PRIVATE
  GPUSCOPE_SLURM_SCRIPTS="${PROJECT_SOURCE_DIR}/deploy/slurm")

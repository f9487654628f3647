# Tests of the mapping-file parsers (src/parsers/mapping.cmake) on fixtures, and their fuzz targets.
gpuscope_add_test(parsers_mapping_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/mapping_files_test.cc
  LIBS gpuscope_parsers_mapping)
target_compile_definitions(parsers_mapping_test PRIVATE
  GPUSCOPE_MAPPING_FIXTURES="${PROJECT_SOURCE_DIR}/tests/fixtures/mapping")

foreach(format dcgm jobstats amd record)
  gpuscope_add_fuzz_target(mapping_${format}_fuzz ${CMAKE_CURRENT_LIST_DIR}/mapping_${format}_fuzz.cc
                           ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/mapping_${format}
                           LIBS gpuscope_parsers_mapping)
endforeach()

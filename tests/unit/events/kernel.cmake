# Tests of the kernel-family event classifiers (XID/SXid, OOM killer, Slurm interruptions).
gpuscope_add_test(events_kernel_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/kernel_classifier_test.cc
  LIBS gpuscope_events_kernel)
target_compile_definitions(events_kernel_test PRIVATE
  GPUSCOPE_EVENTS_KERNEL_FIXTURES="${PROJECT_SOURCE_DIR}/tests/fixtures/events/kernel")

gpuscope_add_fuzz_target(events_kernel_fuzz ${CMAKE_CURRENT_LIST_DIR}/kernel_fuzz.cc
  ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/events_kernel LIBS gpuscope_events_kernel)

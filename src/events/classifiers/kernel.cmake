# Kernel-family event classifiers: NVIDIA Xid/SXid, the OOM killer and Slurm job interruptions.
add_library(gpuscope_events_kernel
  ${CMAKE_CURRENT_LIST_DIR}/xid_catalog.cc
  ${CMAKE_CURRENT_LIST_DIR}/xid.cc
  ${CMAKE_CURRENT_LIST_DIR}/oom.cc
  ${CMAKE_CURRENT_LIST_DIR}/slurm_lines.cc
  ${CMAKE_CURRENT_LIST_DIR}/kernel_classifier.cc)
target_link_libraries(gpuscope_events_kernel PUBLIC gpuscope_events_core
                      PRIVATE gpuscope_events_classifier_text gpuscope_parsers_pci)

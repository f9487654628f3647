# Parsers for the host topology collector: CPU lists, PSI files, PCIe link attributes, process placement.
add_library(gpuscope_parsers_host
  ${CMAKE_CURRENT_LIST_DIR}/cpulist.cc
  ${CMAKE_CURRENT_LIST_DIR}/pcie_link.cc
  ${CMAKE_CURRENT_LIST_DIR}/proc_placement.cc
  ${CMAKE_CURRENT_LIST_DIR}/psi.cc
)
target_link_libraries(gpuscope_parsers_host PUBLIC gpuscope_core gpuscope_parsers_pci gpuscope_parsers_proc)

# Parsers of the InfiniBand / RoCE sysfs value formats (counters, states, rates, PCI addresses).
add_library(gpuscope_parsers_infiniband
  ${CMAKE_CURRENT_LIST_DIR}/ib_sysfs.cc
)
target_link_libraries(gpuscope_parsers_infiniband PUBLIC gpuscope_core gpuscope_parsers_pci)

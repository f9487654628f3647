# Running external commands with a hard timeout (Slurm clients). Guarded so that it may be included
# from more than one place while the wiring settles.
include_guard(GLOBAL)
add_library(gpuscope_platform_command ${CMAKE_CURRENT_LIST_DIR}/command.cc)
target_link_libraries(gpuscope_platform_command PUBLIC gpuscope_core)

# The agent reports the version of CMake's project(VERSION): `--version` prints it and exits 0, and the
# process collector's gpuscope_build_info carries it as its version label.
execute_process(COMMAND ${AGENT} --version OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpuscope-agent --version exited ${rc}")
endif()
string(REPLACE "." "\\." version_regex "${VERSION}")
if(NOT out MATCHES "^gpuscope-agent ${version_regex} \\(revision [^,]+, [^)]+\\)\n$")
  message(FATAL_ERROR "gpuscope-agent --version printed '${out}', not the version ${VERSION}")
endif()

# Only the process collector: no NVML, sysfs or Slurm needed.
execute_process(COMMAND ${AGENT} --once --log.level=error --no-collector.gpu --no-collector.host
                        --no-collector.infiniband --no-collector.slurm
                OUTPUT_VARIABLE exposition RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpuscope-agent --once exited ${rc}")
endif()
if(NOT exposition MATCHES "\ngpuscope_build_info{version=\"${version_regex}\",revision=\"[^\"]+\",compiler=\"[^\"]+\"} 1\n")
  message(FATAL_ERROR "gpuscope_build_info does not carry version ${VERSION}:\n${exposition}")
endif()

# The package_build test (fixture `packages`): the .deb and the .rpm of this build tree, made by CPack into
# OUT (staging in OUT/_CPack_Packages), beside the tree's own `package` target output, so that the tests
# read the packages of what was just built.
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${CPACK} --config ${CONFIG} -G "DEB;RPM" -B ${OUT} -D CPACK_OUTPUT_FILE_PREFIX=${OUT}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack failed: ${rc}")
endif()

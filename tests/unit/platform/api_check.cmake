# gpuscope_add_api_check_test(API PIN INCLUDE_SUBDIR HEADER): the test <api>_api_check_test of our
# declarations src/platform/<api>/<api>_api.h against NVIDIA's own headers (the NVML and the DCGM check).
#   API: nvml or dcgm; the calling folder has <api>_api_facts.py and <api>_api_check_test.cc.
#   PIN: GO_NVML for the Go module that carries NVIDIA's headers, pinned as GO_NVML_MODULE and
#        GO_NVML_VERSION in scripts/versions.env (the one place of the pin), which
#        scripts/install-deps.sh fetches into the Go module cache. The headers are found there offline
#        (GOPROXY=off) and never committed; without them the configuration fails rather than leaving the
#        check out.
#   INCLUDE_SUBDIR: the module's folder of the headers (gen/nvml), given to the compiler with -isystem.
#   HEADER: the header that must be there (nvml.h), named in the messages.
# <api>_api_facts.py (with api_facts.py beside this file) writes the same list of facts twice, one file
# compiled against each side; gpuscope_test_api_facts (api_facts.cc, defined beside this file) compares them.
function(gpuscope_add_api_check_test api pin include_subdir header)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scripts/versions.env)
  file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/versions.env pins REGEX "^${pin}_(MODULE|VERSION)=")
  foreach(line IN LISTS pins)
    string(REGEX MATCH "^[A-Z_]+_(MODULE|VERSION)=\"?([^\"]*)\"?$" matched "${line}")
    set(pinned_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  endforeach()
  if(NOT pinned_MODULE OR NOT pinned_VERSION)
    message(FATAL_ERROR "scripts/versions.env does not pin ${pin}_MODULE and ${pin}_VERSION")
  endif()
  set(module "${pinned_MODULE}@${pinned_VERSION}")
  set(module_dir "")
  find_program(GPUSCOPE_GO_EXECUTABLE go)
  if(GPUSCOPE_GO_EXECUTABLE)
    execute_process(
      COMMAND ${CMAKE_COMMAND} -E env GOPROXY=off ${GPUSCOPE_GO_EXECUTABLE} mod download -json ${module}
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
      OUTPUT_VARIABLE module_json ERROR_QUIET RESULT_VARIABLE module_result)
    if(module_result EQUAL 0)
      string(JSON module_dir ERROR_VARIABLE module_json_error GET "${module_json}" Dir)
    endif()
  endif()
  set(include_dir "${module_dir}/${include_subdir}")
  if(NOT module_dir OR NOT EXISTS "${include_dir}/${header}")
    message(FATAL_ERROR
      "NVIDIA's ${header} (${include_subdir}/${header} of ${module}) is not in the Go module cache; the "
      "test of src/platform/${api}/${api}_api.h needs it. Run scripts/install-deps.sh, which fetches it "
      "(go mod download), then configure again.")
  endif()
  message(STATUS "NVIDIA's ${header}: ${include_dir}/${header}")

  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(our_header ${PROJECT_SOURCE_DIR}/src/platform/${api}/${api}_api.h)
  set(facts_ours ${CMAKE_CURRENT_BINARY_DIR}/${api}_api_facts_ours.cc)
  set(facts_nvidia ${CMAKE_CURRENT_BINARY_DIR}/${api}_api_facts_nvidia.cc)
  add_custom_command(
    OUTPUT ${facts_ours} ${facts_nvidia}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/${api}_api_facts.py
            ${our_header} ${facts_ours} ${facts_nvidia}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${api}_api_facts.py ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/api_facts.py
            ${our_header}
    COMMENT "Listing the declarations of ${api}_api.h to check against NVIDIA's ${header}")
  set_source_files_properties(${facts_nvidia} PROPERTIES COMPILE_OPTIONS "-isystem;${include_dir}")
  gpuscope_add_test(${api}_api_check_test
    SOURCES ${api}_api_check_test.cc ${facts_ours} ${facts_nvidia}
    LIBS gpuscope_test_api_facts
  )
endfunction()

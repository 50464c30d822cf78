# Builds and runs test/consumer/project against csp, as another project would.
#   MODE=installed: installs BUILD_DIR into WORK/prefix, then find_package
#   MODE=subdirectory: add_subdirectory of SOURCE_DIR
# FLAGS: extra compiler and linker flags (the sanitizer build's).
cmake_minimum_required(VERSION 3.25)
foreach(v MODE WORK SOURCE_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "consume.cmake: ${v} is not set")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
# The consumer compiles at -O0 (no build type): what is checked is that the
# headers compile and the libraries link, which -O0 shows in a fraction of
# -O3's time (a sanitized -O3 app.cpp took 70 s). Added as a subdirectory,
# the libraries compile again with it, at -O0 as well.
set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/consumer/project -B ${WORK}/build
    "-DCMAKE_BUILD_TYPE=" "-DCMAKE_CXX_FLAGS=${FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${FLAGS}")
if(MODE STREQUAL "installed")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix)
  if(NOT EXISTS ${WORK}/prefix/lib/cmake/csp/csp-config.cmake AND
     NOT EXISTS ${WORK}/prefix/lib/x86_64-linux-gnu/cmake/csp/csp-config.cmake)
    message(FATAL_ERROR "the install wrote no csp-config.cmake under ${WORK}/prefix")
  endif()
  run(${configure} -DCMAKE_PREFIX_PATH=${WORK}/prefix)
elseif(MODE STREQUAL "subdirectory")
  run(${configure} -DCSP_SOURCE_DIR=${SOURCE_DIR})
  # A project added as a subdirectory builds no tests, benchmarks or examples.
  if(EXISTS ${WORK}/build/csp/test OR EXISTS ${WORK}/build/csp/bench OR EXISTS ${WORK}/build/csp/examples)
    message(FATAL_ERROR "csp added with add_subdirectory configured its tests, benchmarks or examples")
  endif()
else()
  message(FATAL_ERROR "consume.cmake: MODE must be installed or subdirectory, not ${MODE}")
endif()
run(${CMAKE_COMMAND} --build ${WORK}/build -j2 --target app)
run(${WORK}/build/app)
message("${last_output}")
if(NOT last_output MATCHES "graph 6, allreduce 10 10 10 10, channel 42, codec 3")
  message(FATAL_ERROR "the consumer computed the wrong values")
endif()
# The launcher is installed with the library and runs the consumer's program.
if(MODE STREQUAL "installed")
  if(NOT EXISTS ${WORK}/prefix/bin/csp-launch)
    message(FATAL_ERROR "the install wrote no bin/csp-launch")
  endif()
  run(${WORK}/prefix/bin/csp-launch -n 2 ${WORK}/build/app)
  string(REGEX MATCHALL "\\[[01]\\] graph 6" launched "${last_output}")
  list(LENGTH launched n)
  if(NOT n EQUAL 2)
    message(FATAL_ERROR "the installed csp-launch did not run the program on 2 nodes with rank prefixes:\n${last_output}")
  endif()
endif()

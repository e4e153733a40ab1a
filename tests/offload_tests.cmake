# ompc_offload_program(NAME name SOURCE file.c [FLAGS ...]): build file.c
# with our ompcc (a real OpenMP offloading program, as a user would) into
# bin/NAME; FLAGS come after the default flags.
set(OMPC_OMPCC ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/ompcc)
set(OMPC_OFFLOAD_CFLAGS -O1 -g -Wall -Wextra -Werror)
# Sanitizer builds check the runtime (libomptarget and below), which is
# instrumented and linked with the shared sanitizer runtime; the test
# programs stay plain and get that runtime preloaded.
set(OMPC_OFFLOAD_TEST_ENV ${OMPC_TEST_ENV})
if(OMPC_ENABLE_ASAN OR OMPC_ENABLE_TSAN)
  if(OMPC_ENABLE_ASAN)
    set(rtname libclang_rt.asan-x86_64.so)
  else()
    set(rtname libclang_rt.tsan-x86_64.so)
  endif()
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${rtname}
                  OUTPUT_VARIABLE OMPC_SANITIZER_RT OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND OMPC_OFFLOAD_TEST_ENV LD_PRELOAD=${OMPC_SANITIZER_RT})
endif()

function(ompc_offload_program)
  cmake_parse_arguments(P "" "NAME;SOURCE" "FLAGS" ${ARGN})
  set(out ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${P_NAME})
  add_custom_command(OUTPUT ${out}
    COMMAND ${OMPC_OMPCC} ${OMPC_OFFLOAD_CFLAGS} ${P_FLAGS} -o ${out} ${P_SOURCE}
    DEPENDS ${P_SOURCE} omptarget ${OMPC_OMPCC}
    COMMENT "ompcc ${P_NAME}" VERBATIM)
  add_custom_target(build_${P_NAME} ALL DEPENDS ${out})
endfunction()

# ompc_offload_cxx_program(NAME name SOURCES files... [WRAPPER ompcc|ompc++]
#                          [FLAGS ...] [DEPENDS headers...]): build a C++ (or
# C and C++) program with one command line of our ompc++ (or ompcc, which
# links like clang++ when it sees C++ sources) into bin/NAME.
set(OMPC_OMPCXX ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/ompc++)
function(ompc_offload_cxx_program)
  cmake_parse_arguments(P "" "NAME;WRAPPER" "SOURCES;FLAGS;DEPENDS" ${ARGN})
  if(NOT P_WRAPPER)
    set(P_WRAPPER ompc++)
  endif()
  set(wrapper ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${P_WRAPPER})
  set(out ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${P_NAME})
  add_custom_command(OUTPUT ${out}
    COMMAND ${wrapper} ${OMPC_OFFLOAD_CFLAGS} ${P_FLAGS} -o ${out} ${P_SOURCES}
    DEPENDS ${P_SOURCES} ${P_DEPENDS} omptarget ${wrapper}
    COMMENT "${P_WRAPPER} ${P_NAME}" VERBATIM)
  add_custom_target(build_${P_NAME} ALL DEPENDS ${out})
endfunction()

# ompc_offload_test(NAME name NP n... [PROGRAM prog] [ENV ...] [ARGS ...]
#                   [TIMEOUT s]) runs bin/PROGRAM (by default bin/NAME) under
# mpiexec as name:npN for each n.
function(ompc_offload_test)
  cmake_parse_arguments(T "" "NAME;PROGRAM;TIMEOUT" "NP;ENV;ARGS" ${ARGN})
  if(NOT T_PROGRAM)
    set(T_PROGRAM ${T_NAME})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT ${OMPC_TEST_TIMEOUT})
  endif()
  foreach(np IN LISTS T_NP)
    add_test(NAME ${T_NAME}:np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
                     ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${T_PROGRAM} ${T_ARGS})
    set_tests_properties(${T_NAME}:np${np} PROPERTIES TIMEOUT ${T_TIMEOUT}
                         ENVIRONMENT "${OMPC_OFFLOAD_TEST_ENV};${T_ENV}")
  endforeach()
endfunction()

# ompc_offload_expect_test(NAME test PROGRAM prog NP n REGEX re [ENV ...]
#                          [LAUNCH flags...] [ARGS args...]):
# test:npN runs bin/PROGRAM ARGS under mpiexec (LAUNCH: its extra flags)
# and passes when it exits 0 with output matching REGEX (what the runtime
# reports, e.g. OMPC_STATS lines).
function(ompc_offload_expect_test)
  cmake_parse_arguments(T "" "NAME;PROGRAM;NP;REGEX" "ENV;LAUNCH;ARGS" ${ARGN})
  add_test(NAME ${T_NAME}:np${T_NP}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/expect_ok.sh "${T_REGEX}"
                   ${MPIEXEC_EXECUTABLE} ${T_LAUNCH} ${MPIEXEC_NUMPROC_FLAG} ${T_NP}
                   ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${T_PROGRAM} ${T_ARGS})
  set_tests_properties(${T_NAME}:np${T_NP} PROPERTIES TIMEOUT 120
                       ENVIRONMENT "${OMPC_OFFLOAD_TEST_ENV};${T_ENV}")
endfunction()

# ompc_offload_fail_test(NAME test PROGRAM prog NP n REGEX re [ENV] [ARGS]):
# ompc_mpi_fail_test for a program built by ompc_offload_program.
function(ompc_offload_fail_test)
  cmake_parse_arguments(T "" "NAME;PROGRAM;REGEX;LIMIT" "NP;ENV;ARGS" ${ARGN})
  set(limit ${T_LIMIT})
  if(NOT limit)
    set(limit 60)
  endif()
  ompc_mpi_fail_test(NAME ${T_NAME} PROGRAM ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${T_PROGRAM}
                     NP ${T_NP} REGEX "${T_REGEX}" LIMIT ${limit} ARGS ${T_ARGS}
                     ENV ${T_ENV} BASE_ENV ${OMPC_OFFLOAD_TEST_ENV})
endfunction()

# ompc_offload_program(NAME name SOURCE file.c): build file.c with our ompcc
# (a real OpenMP offloading program, as a user would) into bin/NAME.
set(OMPC_OMPCC ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/ompcc)
set(OMPC_OFFLOAD_CFLAGS -O1 -g -Wall -Wextra -Werror)
if(OMPC_ENABLE_ASAN)
  list(APPEND OMPC_OFFLOAD_CFLAGS -fsanitize=address,undefined -fno-omit-frame-pointer)
elseif(OMPC_ENABLE_TSAN)
  list(APPEND OMPC_OFFLOAD_CFLAGS -fsanitize=thread)
endif()

function(ompc_offload_program)
  cmake_parse_arguments(P "" "NAME;SOURCE" "" ${ARGN})
  set(out ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${P_NAME})
  add_custom_command(OUTPUT ${out}
    COMMAND ${OMPC_OMPCC} ${OMPC_OFFLOAD_CFLAGS} -o ${out} ${P_SOURCE}
    DEPENDS ${P_SOURCE} omptarget ${OMPC_OMPCC}
    COMMENT "ompcc ${P_NAME}" VERBATIM)
  add_custom_target(build_${P_NAME} ALL DEPENDS ${out})
endfunction()

# ompc_offload_test(NAME name NP n... [ENV ...]) runs bin/NAME under mpiexec.
function(ompc_offload_test)
  cmake_parse_arguments(T "" "NAME" "NP;ENV;ARGS" ${ARGN})
  foreach(np IN LISTS T_NP)
    add_test(NAME ${T_NAME}:np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
                     ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${T_NAME} ${T_ARGS})
    set_tests_properties(${T_NAME}:np${np} PROPERTIES TIMEOUT ${OMPC_TEST_TIMEOUT}
                         ENVIRONMENT "${OMPC_TEST_ENV};${T_ENV}")
  endforeach()
endfunction()

# ompc_offload_fail_test(NAME test PROGRAM prog NP n REGEX re [ENV] [ARGS])
function(ompc_offload_fail_test)
  cmake_parse_arguments(T "" "NAME;PROGRAM;REGEX;LIMIT" "NP;ENV;ARGS" ${ARGN})
  if(NOT T_LIMIT)
    set(T_LIMIT 60)
  endif()
  foreach(np IN LISTS T_NP)
    add_test(NAME ${T_NAME}:np${np}
             COMMAND ${OMPC_EXPECT_FAIL} ${T_LIMIT} "${T_REGEX}"
                     ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np}
                     ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/${T_PROGRAM} ${T_ARGS})
    math(EXPR lim "${T_LIMIT} + 30")
    set_tests_properties(${T_NAME}:np${np} PROPERTIES TIMEOUT ${lim}
                         ENVIRONMENT "${OMPC_TEST_ENV};${T_ENV}")
  endforeach()
endfunction()

# ctest batch_cli_mpirun: omni-dp-batch under `mpirun -np 2` prints an error once (rank 0
# only), exits 2, and prints a successful validation once.
#   cmake -DMPIEXEC=mpirun -DBATCH=omni-dp-batch -DCONFIGS=configs -P batch_mpirun_check.cmake

function(count_matches text regex out)
  string(REGEX MATCHALL "${regex}" matches "${text}")
  list(LENGTH matches n)
  set(${out} ${n} PARENT_SCOPE)
endfunction()

execute_process(
  COMMAND ${MPIEXEC} -np 2 --oversubscribe ${BATCH} --validate-only --set scheduler.polcy=x
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
count_matches("${err}" "omni-dp-batch: error: scheduler\\.polcy: unknown key \\(did you mean 'policy'\\?\\)" n)
if(NOT rc EQUAL 2 OR NOT n EQUAL 1)
  message(FATAL_ERROR "bad --set under mpirun: exit ${rc} (expected 2), ${n} error lines "
                      "(expected 1)\nstdout:\n${out}\nstderr:\n${err}")
endif()

execute_process(
  COMMAND ${MPIEXEC} -np 2 --oversubscribe ${BATCH} --validate-only --config ${CONFIGS}/tiny.yaml
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
count_matches("${out}" "demo\\.jsonl: OK, 18 requests" n)
if(NOT rc EQUAL 0 OR NOT n EQUAL 1)
  message(FATAL_ERROR "--validate-only under mpirun: exit ${rc} (expected 0), ${n} OK lines "
                      "(expected 1)\nstdout:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "omni-dp-batch under mpirun -np 2: one error line, exit 2; one OK line, exit 0")

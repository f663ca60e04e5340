# ctest batch_cli_mpirun: omni-dp-batch under mpirun prints an error exactly once, exits 2, and
# prints a successful validation once.
#   cmake -DMPIEXEC=mpirun -DBATCH=omni-dp-batch -DCONFIGS=configs -P batch_mpirun_check.cmake
#
# Issue 52, class 15: the first rank to exit with an error makes mpirun kill the others, so an
# error only rank 0 printed could be lost (a bad --set exited 2 with no line at all, once, on a
# loaded machine). Without timing: a mode that runs no job is rank 0's alone (the other ranks
# exit 0 at once); a job's ranks agree in their first collective which rank prints, and none
# leaves MPI_Finalize before that rank has printed. Each case below is therefore exact: one line,
# whichever rank stopped, and whatever the load.

function(count_matches text regex out)
  string(REGEX MATCHALL "${regex}" matches "${text}")
  list(LENGTH matches n)
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# run_case(name EXPECTED_RC LINE_REGEX cmd...): exit EXPECTED_RC, stderr holds exactly one
# "omni-dp-batch: error:" line and it matches LINE_REGEX.
function(run_case name expected_rc line_regex)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 120)
  count_matches("${err}" "omni-dp-batch: error:" all)
  count_matches("${err}" "${line_regex}" n)
  if(NOT rc EQUAL ${expected_rc} OR NOT all EQUAL 1 OR NOT n EQUAL 1)
    message(FATAL_ERROR "${name}: exit ${rc} (expected ${expected_rc}), ${all} error lines, "
                        "${n} matching '${line_regex}' (expected 1 and 1)\nstdout:\n${out}\n"
                        "stderr:\n${err}")
  endif()
  message(STATUS "${name}: exit ${rc}, one error line")
endfunction()

set(polcy "omni-dp-batch: error: scheduler\\.polcy: unknown key \\(did you mean 'policy'\\?\\)")
set(MPI ${MPIEXEC} --oversubscribe --bind-to none)

# A mode that runs no job (--validate-only): rank 0 alone validates and prints.
run_case(validate_bad_set 2 "${polcy}\n"
  ${MPI} -np 2 ${BATCH} --validate-only --set scheduler.polcy=x)
# A job's bad --set, every rank stopping before the job: rank 0 prints, three times in a row.
foreach(i RANGE 1 3)
  run_case(job_bad_set_${i} 2 "${polcy}\n" ${MPI} -np 2 ${BATCH} --set scheduler.polcy=x)
endforeach()
run_case(job_bad_set_3_ranks 2 "${polcy}\n" ${MPI} -np 3 ${BATCH} --set scheduler.polcy=x)
# A bad option: every rank stops while parsing.
run_case(job_bad_option 2 "omni-dp-batch: error: [^\n]*--bogus[^\n]* \\(see --help\\)\n"
  ${MPI} -np 2 ${BATCH} --bogus)

# One rank stops, the other starts its job (the shell's choice is written without ';', which
# would split the argument into a CMake list) (a config only one node cannot read): the one that
# stopped prints (a rank other than 0 names itself), the other's job stops at its first
# collective (exit 2, no output folder), nothing hangs.
string(RANDOM LENGTH 8 tag)
set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/mpirun-check-${tag}")
set(good "--config ${CONFIGS}/synthetic.yaml --output ${out_dir}")
set(bad "--set scheduler.polcy=x")
run_case(rank_1_stops 2 "${polcy} \\(rank 1\\)\n" ${MPI} -np 2 sh -c
  "[ \"$OMPI_COMM_WORLD_RANK\" = 1 ] && exec \"$0\" ${bad} || exec \"$0\" ${good}"
  ${BATCH})
run_case(rank_0_stops 2 "${polcy}\n" ${MPI} -np 2 sh -c
  "[ \"$OMPI_COMM_WORLD_RANK\" = 0 ] && exec \"$0\" ${bad} || exec \"$0\" ${good}"
  ${BATCH})
if(EXISTS "${out_dir}")
  message(FATAL_ERROR "a job whose other rank stopped before it created ${out_dir}")
endif()

execute_process(
  COMMAND ${MPI} -np 2 ${BATCH} --validate-only --config ${CONFIGS}/tiny.yaml
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
count_matches("${out}" "demo\\.jsonl: OK, 18 requests" n)
if(NOT rc EQUAL 0 OR NOT n EQUAL 1)
  message(FATAL_ERROR "--validate-only under mpirun: exit ${rc} (expected 0), ${n} OK lines "
                      "(expected 1)\nstdout:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "omni-dp-batch under mpirun: one error line whichever rank stopped; one OK line")

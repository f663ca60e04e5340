#!/usr/bin/env bash
# jobs/omnidp-job.sh without Slurm (a stub scontrol records the requeue): TERM to the job script
# (what Slurm sends) drains the job, which exits 75 and requeues. Before, the script passed TERM
# on to mpirun, which (Open MPI 4.1) killed the ranks mid-drain and exited 1: no requeue. Then
# the same with USR1.
# Usage: job_script_test.sh SOURCE_DIR BIN_DIR WORK_DIR
set -uo pipefail
src=$1 bin=$2 work=$3
rm -rf "$work" && mkdir -p "$work/stub"
fail() { echo "FAIL: $*"; tail -n 20 "$work"/*.log; exit 1; }
printf '#!/bin/sh\necho "scontrol $*" >> %s/scontrol.calls\n' "$work" > "$work/stub/scontrol"
chmod +x "$work/stub/scontrol"
export PATH=$work/stub:$PATH OMP_NUM_THREADS=1
if ((EUID == 0)); then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

# run_signalled NAME SIGNAL: the job script under a fake Slurm job, SIGNAL once a request is done.
run_signalled() {
  local name=$1 sig=$2 log=$work/$1.log
  (
    export SLURM_JOB_ID=$name SLURM_JOB_NAME=$name SLURM_RESTART_COUNT=0 OMNIDP_BIN=$bin
    export OMNIDP_CONFIG=$src/configs/synthetic.yaml OMNIDP_MANIFEST=$src/configs/prompts/demo.jsonl
    export OMNIDP_RESULTS=$work/results OMNIDP_ARGS="--set synthetic.seconds_per_gcost=3000"
    source "$src/jobs/omnidp-job.sh"
    omnidp_job mpirun -np 2 --oversubscribe --bind-to none
  ) > "$log" 2>&1 &
  local pid=$!
  # The event, not a time: the first finished request (the traps are set before it starts).
  for _ in $(seq 1 600); do
    grep -qE 'progress: [1-9][0-9]*/' "$log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -qE 'progress: [1-9][0-9]*/' "$log" || fail "$name: no progress"
  kill "-$sig" "$pid"
  wait "$pid"
  echo "$?"
}

rc=$(run_signalled term TERM)
[[ $rc == 75 ]] || fail "TERM: the job script exited $rc, expected 75"
grep -q "summary: .*INTERRUPTED" "$work/term.log" || fail "TERM: the job did not drain"
grep -q "scontrol requeue term" "$work/scontrol.calls" || fail "TERM: no requeue"
rc=$(run_signalled usr1 USR1)
[[ $rc == 75 ]] || fail "USR1: the job script exited $rc, expected 75"
grep -q "scontrol requeue usr1" "$work/scontrol.calls" || fail "USR1: no requeue"
# Issue 52, class 7: USR1 the moment the job script has launched mpirun (its first line, printed
# just before the launch: mpirun has not started the ranks yet and would drop the signal, so the
# job ran to its end and exited 0). The script holds the drain until the ranks exist: exit 75.
log=$work/early.log
(
  export SLURM_JOB_ID=early SLURM_JOB_NAME=early SLURM_RESTART_COUNT=0 OMNIDP_BIN=$bin
  export OMNIDP_CONFIG=$src/configs/synthetic.yaml OMNIDP_MANIFEST=$src/configs/prompts/demo.jsonl
  export OMNIDP_RESULTS=$work/results OMNIDP_ARGS="--set synthetic.seconds_per_gcost=3000"
  source "$src/jobs/omnidp-job.sh"
  omnidp_job mpirun -np 2 --oversubscribe --bind-to none
) > "$log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do  # the event: the launch line
  grep -q "omni-dp job early restart" "$log" 2>/dev/null && break
  sleep 0.01
done
kill -USR1 "$pid"
wait "$pid"
rc=$?
[[ $rc == 75 ]] || fail "USR1 at the launch: the job script exited $rc, expected 75"
grep -q "summary: .*INTERRUPTED" "$log" || fail "USR1 at the launch: the job did not drain"
grep -q "scontrol requeue early" "$work/scontrol.calls" || fail "USR1 at the launch: no requeue"
echo "PASS: TERM and USR1 to the job script drain, exit 75 and requeue; USR1 at the launch too"

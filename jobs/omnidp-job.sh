# Sourced by the job scripts of jobs/: the requeue-safe run of omni-dp-batch under Slurm.
#   omnidp_job LAUNCHER...    e.g. omnidp_job mpirun -np "$SLURM_NTASKS"
# - arguments: --config "$OMNIDP_CONFIG" --output "$OMNIDP_RESULTS/$SLURM_JOB_NAME"
#   [--manifest "$OMNIDP_MANIFEST"] [--resume when SLURM_RESTART_COUNT > 0] $OMNIDP_ARGS;
# - USR1 (from --signal=B:USR1@120 or `scancel --signal=USR1 --batch`) and TERM are forwarded to
#   the launcher, which forwards them to every rank: the job drains and exits 75;
# - exit 75 -> `scontrol requeue`: Slurm restarts the script, which resumes. Open MPI's mpirun
#   exits 1 when it was signalled itself (TERM), even when every rank drained and exited 75: after
#   a forwarded signal, a summary.json written by this run with "interrupted": true (the job
#   writes it last, only when no rank failed) stands for the 75 the ranks chose.
# The environment: OMNIDP_BIN (folder of omni-dp-batch), OMNIDP_CONFIG, OMNIDP_MANIFEST,
# OMNIDP_RESULTS (parent of the per-job-name results folder), OMNIDP_ARGS.
omnidp_job() {
  local bin=${OMNIDP_BIN:-build/release/bin}
  local args=(--config "${OMNIDP_CONFIG:?set OMNIDP_CONFIG}" --output "${OMNIDP_RESULTS:-results}/${SLURM_JOB_NAME}")
  [[ -n ${OMNIDP_MANIFEST:-} ]] && args+=(--manifest "$OMNIDP_MANIFEST")
  if [[ ${SLURM_RESTART_COUNT:-0} -gt 0 ]]; then args+=(--resume); fi
  # shellcheck disable=SC2206
  args+=(${OMNIDP_ARGS:-})
  if [[ $EUID -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

  echo "omni-dp job $SLURM_JOB_ID restart ${SLURM_RESTART_COUNT:-0} on ${SLURM_JOB_NODELIST:-?}: $* omni-dp-batch ${args[*]}"
  local started
  started=$(date +%s)
  "$@" "$bin/omni-dp-batch" "${args[@]}" &
  local pid=$! rc=0 signalled=0
  trap 'echo "omni-dp job $SLURM_JOB_ID: USR1, draining"; signalled=1; kill -USR1 '"$pid" USR1
  trap 'echo "omni-dp job $SLURM_JOB_ID: TERM, draining"; signalled=1; kill -TERM '"$pid" TERM
  wait "$pid" || rc=$?
  while kill -0 "$pid" 2>/dev/null; do  # wait returned for a trap: wait for the drain
    rc=0
    wait "$pid" || rc=$?
  done
  local summary=${OMNIDP_RESULTS:-results}/${SLURM_JOB_NAME}/summary.json
  if ((signalled && rc != 0 && rc != 75)) && [[ -f $summary ]] &&
    (($(stat -c %Y "$summary") >= started)) && grep -q '"interrupted": *true' "$summary"; then
    echo "omni-dp job $SLURM_JOB_ID: the launcher exited $rc after the signal; the job drained ($summary)"
    rc=75
  fi
  echo "omni-dp job $SLURM_JOB_ID: omni-dp-batch exit $rc"
  if [[ $rc -eq 75 ]]; then scontrol requeue "$SLURM_JOB_ID"; fi  # resumes (SLURM_RESTART_COUNT)
  return "$rc"
}

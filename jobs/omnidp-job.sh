# Sourced by the job scripts of jobs/: the requeue-safe run of omni-dp-batch under Slurm.
#   omnidp_job LAUNCHER...    e.g. omnidp_job mpirun -np "$SLURM_NTASKS"
# - arguments: --config "$OMNIDP_CONFIG" --output "$OMNIDP_RESULTS/$SLURM_JOB_NAME"
#   [--manifest "$OMNIDP_MANIFEST"] [--resume when SLURM_RESTART_COUNT > 0] $OMNIDP_ARGS;
# - USR1 (from --signal=B:USR1@120 or `scancel --signal=USR1 --batch`) and TERM are forwarded to
#   the launcher as USR1, which forwards it to every rank: the job drains and exits 75; one that
#   comes before mpirun has started the ranks is held until it has (mpirun would drop it);
# - exit 75 -> `scontrol requeue`: Slurm restarts the script, which resumes.
# - TERM is forwarded as USR1: Open MPI's mpirun, TERMed itself, kills the ranks a moment after
#   passing TERM on (their running requests are lost, it exits 1 and nothing requeues), while it
#   passes USR1 through and returns the ranks' 75.
# The environment: OMNIDP_BIN (folder of omni-dp-batch), OMNIDP_CONFIG, OMNIDP_MANIFEST,
# OMNIDP_RESULTS (parent of the per-job-name results folder), OMNIDP_ARGS.
# Whether LAUNCHER (its command name) has started the ranks, so that a signal to it reaches
# them: mpirun's own children running omni-dp-batch; any other launcher (srun) at once.
omnidp_ranks_started() {
  [[ $(basename "$1") != mpirun ]] || ! command -v pgrep > /dev/null ||
    pgrep -P "$2" -f omni-dp-batch > /dev/null
}

omnidp_job() {
  local bin=${OMNIDP_BIN:-build/release/bin}
  local args=(--config "${OMNIDP_CONFIG:?set OMNIDP_CONFIG}" --output "${OMNIDP_RESULTS:-results}/${SLURM_JOB_NAME}")
  [[ -n ${OMNIDP_MANIFEST:-} ]] && args+=(--manifest "$OMNIDP_MANIFEST")
  if [[ ${SLURM_RESTART_COUNT:-0} -gt 0 ]]; then args+=(--resume); fi
  # shellcheck disable=SC2206
  args+=(${OMNIDP_ARGS:-})
  if [[ $EUID -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

  # The traps come before the launch, and a drain asked before the launcher has started the ranks
  # is held until it has: a signal in the job's first moments is never lost (Open MPI 4.1's
  # mpirun drops a USR1 that comes before it has forked its ranks: the job would run to its end).
  local drain=0 sent=0
  trap 'echo "omni-dp job $SLURM_JOB_ID: USR1, draining"; ((drain += 1))' USR1
  trap 'echo "omni-dp job $SLURM_JOB_ID: TERM, draining (forwarded as USR1)"; ((drain += 1))' TERM
  echo "omni-dp job $SLURM_JOB_ID restart ${SLURM_RESTART_COUNT:-0} on ${SLURM_JOB_NODELIST:-?}: $* omni-dp-batch ${args[*]}"
  "$@" "$bin/omni-dp-batch" "${args[@]}" &
  local pid=$! rc=0 reaped=0
  while kill -0 "$pid" 2>/dev/null; do
    if ((sent < drain)); then  # each signal once (a second one abandons running requests)
      if ! omnidp_ranks_started "$1" "$pid"; then
        sleep 0.2  # the launcher is still starting the ranks
        continue
      fi
      kill -USR1 "$pid" 2>/dev/null
      ((sent += 1))
      continue
    fi
    rc=0
    wait "$pid" || rc=$?  # returns early when a trap runs: the loop forwards the drain
    if ! kill -0 "$pid" 2>/dev/null; then reaped=1; fi
  done
  if ((!reaped)); then
    rc=0
    wait "$pid" || rc=$?
  fi
  echo "omni-dp job $SLURM_JOB_ID: omni-dp-batch exit $rc"
  if [[ $rc -eq 75 ]]; then scontrol requeue "$SLURM_JOB_ID"; fi  # resumes (SLURM_RESTART_COUNT)
  return "$rc"
}

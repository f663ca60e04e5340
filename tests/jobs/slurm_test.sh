#!/usr/bin/env bash
# A real single-node Slurm (Debian's slurm-wlm + munge) running the CPU demo job script
# jobs/omni-dp-cpu-demo.sbatch with the synthetic model:
#   1. a plain `mpirun` run is the baseline;
#   2. the job script, submitted with sbatch, must give the same hashes (omni-dp-compare);
#   3. requeue: a slower job gets USR1 mid-run (scancel --signal=USR1 --batch), drains (exit 75),
#      requeues itself, restarts with --resume and finishes: every request done once, same hashes.
# Installs slurm-wlm and munge when missing (as root); exits 77 (ctest: skipped) only when Slurm
# cannot be started here. The daemons are stopped at the end, whatever happened.
# Usage: slurm_test.sh SOURCE_DIR BIN_DIR WORK_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"/{state,spool,log,logs}
work=$(cd "$work" && pwd)

skip() { echo "SKIP: $*"; exit 77; }
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/logs/*.log "$work"/log/*.log; do [[ -f $f ]] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }; done
  exit 1
}

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  [[ $EUID -eq 0 ]] || skip "slurm-wlm/munge are not installed and this is not root"
  echo "installing slurm-wlm and munge"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge \
    >"$work/log/apt.log" 2>&1 ||
    { apt-get update -q >>"$work/log/apt.log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge \
        >>"$work/log/apt.log" 2>&1; } || skip "apt-get could not install slurm-wlm munge"
fi
[[ $EUID -eq 0 ]] || skip "the test daemons run as root (SlurmUser=root)"

host=$(hostname -s)
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
export SLURM_CONF="$work/slurm.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=omnidp-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# A requeued job waits cred_expire seconds (default 120) before it may start again: slurmd
# refuses its revoked credential until then. 5 is the smallest value.
AuthInfo=cred_expire=5
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
# no cgroups: plain process tracking, no task binding, no accounting
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobRequeue=1
MpiDefault=none
SlurmctldPort=6817
SlurmdPort=6818
NodeName=$host CPUs=$cores State=UNKNOWN
PartitionName=omnidp Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF

started_munge=0
cleanup() {
  scontrol shutdown >/dev/null 2>&1 || true  # both daemons
  local d pid
  for d in slurmd slurmctld; do
    [[ -f $work/$d.pid ]] || continue
    pid=$(cat "$work/$d.pid")
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if ((started_munge)); then pkill -x munged 2>/dev/null || true; fi
}
trap cleanup EXIT

if ! pgrep -x munged >/dev/null; then
  mkdir -p /run/munge
  munged --force >"$work/log/munged.out" 2>&1 || skip "munged does not start: $(tail -n 1 "$work/log/munged.out")"
  started_munge=1
fi
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start"
slurmd -f "$SLURM_CONF" || skip "slurmd does not start"
for _ in $(seq 1 30); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %T | grep -q idle || skip "the Slurm node does not become idle: $(sinfo 2>&1 | tail -n 1)"
echo "slurm: $(sinfo -h -o '%P %D %T %C')"

export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
config=$src/configs/synthetic.yaml
manifest=$src/configs/prompts/demo.jsonl
requests=$(grep -cv '^\s*\(#\|$\)' "$manifest")

# rows FILE: rows of FILE's /requests table.
rows() { h5dump -H -d /requests "$1" | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p'; }

# job_state ID: "STATE RESTARTS"
job_state() {
  scontrol show job "$1" 2>/dev/null |
    sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p; s/.*Restarts=\([0-9]*\).*/\1/p' | paste -sd' '
}

# wait_done ID SECONDS: waits until the job has ended (a requeued job starts again after
# cred_expire seconds).
wait_done() {
  local id=$1 limit=$2 st
  for ((t = 0; t < limit; t++)); do
    st=$(job_state "$id")
    case $st in
      COMPLETED* | FAILED* | CANCELLED* | TIMEOUT* | NODE_FAIL* | OUT_OF_MEMORY*) echo "$st"; return 0 ;;
    esac
    sleep 1
  done
  echo "TIMEOUT_WAITING $st"
}

# submit NAME [OMNIDP_ARGS]: submits the CPU demo script on the synthetic model.
submit() {
  OMNIDP_JOBS=$src/jobs OMNIDP_BIN=$bin OMNIDP_CONFIG=$config OMNIDP_MANIFEST=$manifest OMNIDP_RESULTS=$work/results \
    OMNIDP_ARGS=${2:-} sbatch --parsable --chdir="$work" --job-name="$1" "$src/jobs/omni-dp-cpu-demo.sbatch"
}

echo "=== baseline: plain mpirun -np 2"
mpirun -np 2 --oversubscribe "$bin/omni-dp-batch" --config "$config" --manifest "$manifest" \
  --output "$work/baseline" --set synthetic.seconds_per_gcost=1 >"$work/logs/baseline.log" 2>&1 ||
  fail "baseline run failed"

echo "=== sbatch jobs/omni-dp-cpu-demo.sbatch"
id=$(submit plain "--set synthetic.seconds_per_gcost=1")
st=$(wait_done "$id" 300)
[[ $st == "COMPLETED 0" ]] || fail "job $id ended as '$st', expected 'COMPLETED 0'"
"$bin/omni-dp-compare" "$work/baseline" "$work/results/plain" || fail "sbatch run differs from the baseline"
[[ $(rows "$work/results/plain/results.h5") == "$requests" ]] || fail "plain job: not $requests rows"

echo "=== requeue: USR1 mid-run, drain, requeue, --resume"
id=$(submit requeue "--set synthetic.seconds_per_gcost=3000")
log=$work/logs/requeue-$id.log
for _ in $(seq 1 120); do
  grep -qE 'progress: [1-9][0-9]*/' "$log" 2>/dev/null && break  # at least one request done
  sleep 1
done
grep -qE 'progress: [1-9][0-9]*/' "$log" || fail "the job never made progress"
scancel --signal=USR1 --batch "$id"
st=$(wait_done "$id" 400)
[[ $st == "COMPLETED 1" ]] || fail "job $id ended as '$st', expected 'COMPLETED 1' (one requeue)"
grep -q "omni-dp-batch exit 75" "$log" || fail "the first run did not drain with exit 75"
grep -q "restart 1 .*--resume" "$log" || fail "the restarted job did not run with --resume"
grep -q "already done, skipped" "$log" || fail "the restarted job skipped nothing"
"$bin/omni-dp-compare" "$work/baseline" "$work/results/requeue" || fail "requeued run differs from the baseline"
[[ $(rows "$work/results/requeue/results.h5") == "$requests" ]] ||
  fail "requeued job: $(rows "$work/results/requeue/results.h5") rows, expected $requests (each request once)"
echo "PASS: sbatch run and requeued run equal the mpirun baseline ($requests requests each, once)"

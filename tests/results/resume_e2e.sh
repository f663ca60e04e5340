#!/usr/bin/env bash
# Resume end to end (docs/results.md, "Resume"): a run interrupted by a drain (exit 75)
# and a run whose rank 1 SIGKILLs itself inside an HDF5 write, each resumed (the second with
# another world size), must merge to exactly the hashes of an uninterrupted run, with no
# duplicate rows and no request generated twice.
# usage: resume_e2e.sh BATCH COMPARE MPIEXEC CONFIG WORKDIR
set -euo pipefail
BATCH=$1 COMPARE=$2 MPIEXEC=$3 CONFIG=$4 WORK=$5
# Requests of 0.05-1.3 s, so that the drain after 5 completions leaves work undone.
SECONDS_PER_GCOST=400
source "$(dirname "$0")/e2e_lib.sh"
rm -rf "$WORK" && mkdir -p "$WORK"

# resumed NAME RANKS: the run in $WORK/NAME resumed on RANKS ranks exits 0, and its results.h5
# then holds every request once, each generated once, hash for hash the uninterrupted run's.
resumed() {
  local name=$1 ranks=$2
  expect_rc "resumed $name on $ranks ranks" 0 "$(batch "$ranks" "$WORK/$name")" "$WORK/$name.log"
  [[ "$(rows "$WORK/$name/results.h5")" == "$requests" ]] || fail "$name: merged row count"
  [[ "$(rank_rows "$WORK/$name")" == "$requests" ]] || fail "$name: a request was generated twice"
  compare_ok "$WORK/full/results.h5" "$WORK/$name/results.h5"
  compare_ok "$WORK/$name/results.h5" "$WORK/full/results.h5"
}

expect_rc "uninterrupted N=2" 0 "$(batch 2 "$WORK/full")" "$WORK/full.log"
requests=$(rows "$WORK/full/results.h5")
[[ "$requests" -gt 6 ]] || fail "the manifest is too small for this test ($requests)"

# Drained after 5 completions: exit 75, partial results.h5, then resumed.
expect_rc "drained run" 75 "$(batch 2 "$WORK/drain" --set faults.drain_after=5)" \
  "$WORK/drain.log"
partial=$(rows "$WORK/drain/results.h5")
[[ "$partial" -ge 5 && "$partial" -lt "$requests" ]] || fail "drained run holds $partial rows"
echo "drained run: $partial of $requests requests in its results.h5"
resumed drain 2
echo "drain at 5 of $requests, resume: equal to the uninterrupted run"

# Rank 1 kills itself between its 3rd video write and the flush; mpirun ends the job.
# round_robin gives rank 1 every other request, so it surely reaches its 3rd write.
rc=$(batch 2 "$WORK/kill" --set scheduler.policy=round_robin --set faults.kill_rank=1 \
  --set faults.kill_after=3 --set faults.kill_in_write=true)
[[ "$rc" != 0 && "$rc" != 75 ]] || fail "killed run: exit $rc"
grep -q "kills itself inside write 3" "$WORK/kill.log" || fail "the kill did not happen in a write"
echo "killed run: exit $rc"
resumed kill 4
echo "kill in write, resume at N=4: equal to the uninterrupted run"

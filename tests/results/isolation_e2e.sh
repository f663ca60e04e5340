#!/usr/bin/env bash
# The isolation check end to end (docs/results.md, "The numerics profile"): the synthetic model at N=1 is the baseline;
# N=2 and N=4 with both scheduling policies must compare equal to it (hash by hash, by input
# key); a copy with one corrupted video must fail the compare and name its id.
# usage: isolation_e2e.sh BATCH COMPARE CORRUPT_TOOL MPIEXEC CONFIG WORKDIR
set -euo pipefail
BATCH=$1 COMPARE=$2 CORRUPT=$3 MPIEXEC=$4 CONFIG=$5 WORK=$6
source "$(dirname "$0")/e2e_lib.sh"
rm -rf "$WORK" && mkdir -p "$WORK"

expect_rc "baseline N=1" 0 "$(batch 1 "$WORK/n1")" "$WORK/n1.log"
requests=$(rows "$WORK/n1/results.h5")
[[ "$requests" -gt 0 ]] || fail "the baseline holds no requests"
for n in 2 4; do
  for policy in dynamic round_robin; do
    out="$WORK/n$n-$policy"
    expect_rc "N=$n $policy" 0 "$(batch "$n" "$out" --set "scheduler.policy=$policy")" "$out.log"
    [[ "$(rows "$out/results.h5")" == "$requests" ]] || fail "N=$n $policy: row count"
    compare_ok "$WORK/n1" "$out"                          # rank files
    compare_ok "$WORK/n1/results.h5" "$out/results.h5"    # merged files
    compare_ok "$out/results.h5" "$WORK/n1/results.h5"    # nothing extra either
    echo "N=$n $policy: $requests requests equal to the baseline"
  done
done

cp -r "$WORK/n2-dynamic" "$WORK/corrupt"
id=$("$CORRUPT" "$WORK/corrupt")
rc=0
"$COMPARE" "$WORK/n1" "$WORK/corrupt/results.h5" >"$WORK/corrupt.out" 2>&1 || rc=$?
expect_rc "compare with a corrupted video" 1 "$rc" "$WORK/corrupt.out"
grep -qF "  $id: A " "$WORK/corrupt.out" || { cat "$WORK/corrupt.out" >&2; fail "id $id not named"; }
grep -q "^mismatched:  1$" "$WORK/corrupt.out" || fail "expected exactly one mismatch"
echo "corrupted video '$id' detected and named"

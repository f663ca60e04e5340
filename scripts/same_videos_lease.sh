#!/usr/bin/env bash
# Issue 35's whole before/after proof in one GPU lease (docs/architecture.md, "How a model is
# built", session 24): builds the tree before (a source folder, e.g. `git archive REV | tar -x -C
# DIR`) and this tree with scripts/build_gpu.sh, writes a HunyuanVideo-1.5 and a Wan2.2-TI2V-5B
# snapshot (released transformer and VAE architectures, seeded random weights, short text
# encoders) with the tree-before's omni-dp-bench-make-snapshot, then runs
# scripts/same_videos_gpu.sh layout by layout, most needed first:
#   HunyuanVideo-1.5 TP 2 (2 steps; before and after at once), HunyuanVideo-1.5 CFG 2 (30 steps),
#   bf16 of both models (30 steps, 3 requests: the timing), fp8 of both (30 steps),
#   Wan TP 2 and SP 2 (2 steps, at once), Wan CFG 2 (30 steps, at once), HunyuanVideo-1.5 SP 2
#   (2 steps).
# Two ranks on one GPU go through the MPI backend (host-staged collectives): HunyuanVideo-1.5
# TP 2 takes about 76 s a step on an H200, hence 2 steps for TP and SP.
#   scripts/same_videos_lease.sh BEFORE_SRC [WORK_DIR]   (WORK_DIR default /tmp/omnidp-lease)
# Prints each phase's hashes, seconds and omni-dp-compare verdict; the logs stay in WORK_DIR.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
before_src=$(realpath "${1:?the tree-before source folder}")
w=$(realpath -m "${2:-/tmp/omnidp-lease}")
mkdir -p "$w"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }
targets=(omni-dp-batch omni-dp-compare omni-dp-bench-make-snapshot)
(cd "$before_src" && bash scripts/build_gpu.sh "$w/before" "${targets[@]}" > "$w/build-before.log" 2>&1) &
bb=$!
bash "$root/scripts/build_gpu.sh" "$w/after" "${targets[@]}" > "$w/build-after.log" 2>&1 ||
  { stamp "the build of this tree failed: $w/build-after.log"; exit 1; }
wait "$bb" || { stamp "the build of the tree before failed: $w/build-before.log"; exit 1; }
stamp "built"
snap=$w/snap
make_snapshot=$w/before/bin/omni-dp-bench-make-snapshot
[ -f "$snap/hv15/model_index.json" ] ||
  "$make_snapshot" --model hv15 --task t2v --text-layers 2 --seed 1 --out "$snap/hv15" > "$w/snap-hv15.log" 2>&1 &
[ -f "$snap/wan/model_index.json" ] ||
  "$make_snapshot" --model wan --text-layers 1 --seed 3 --out "$snap/wan" > "$w/snap-wan.log" 2>&1
wait
stamp "snapshots: $(du -sh "$snap/hv15" "$snap/wan" | tr '\n' ' ')"
export SAME_SNAPSHOT_WAN=$snap/wan SAME_SNAPSHOT_HV15=$snap/hv15
phase() {
  local name=$1
  shift
  stamp "phase $name"
  env "$@" SAME_OUT="$w/same-$name" bash "$root/scripts/same_videos_gpu.sh" "$w/before" "$w/after" 2>&1 |
    grep -v '^  [AB]: \|^numerics profiles differ' | tee "$w/phase-$name.txt"
}
phase hv15-tp2 SAME_MODELS=hv15 SAME_LAYOUTS=tp2 SAME_GROUP_STEPS=2 SAME_CONCURRENT_GROUPS=1
phase hv15-cfg2 SAME_MODELS=hv15 SAME_LAYOUTS=cfg2 SAME_GROUP_STEPS=30
phase bf16 SAME_MODELS="wan hv15" SAME_LAYOUTS=bf16 SAME_REQUESTS=3
phase fp8 SAME_MODELS="wan hv15" SAME_LAYOUTS=fp8
phase wan-tp2-sp2 SAME_MODELS=wan SAME_LAYOUTS="tp2 sp2" SAME_GROUP_STEPS=2 SAME_CONCURRENT_GROUPS=1
phase wan-cfg2 SAME_MODELS=wan SAME_LAYOUTS=cfg2 SAME_GROUP_STEPS=30 SAME_CONCURRENT_GROUPS=1
phase hv15-sp2 SAME_MODELS=hv15 SAME_LAYOUTS=sp2 SAME_GROUP_STEPS=2
stamp "done: $(grep -h '^PASS' "$w"/phase-*.txt | wc -l) layouts passed, $(grep -h '^FAIL' "$w"/phase-*.txt | wc -l) failed"

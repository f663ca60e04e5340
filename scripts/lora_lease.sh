#!/usr/bin/env bash
# Issue 53's GPU checks in one lease (docs/performance.md, "LoRA"): the LoRA fixtures of
# scripts/lora_fixtures.py (diffusers' own load_lora_weights, on the CPU, while the build runs),
# the build, then scripts/bench_gpu.sh lora-a14b (the Lightning-shaped pair at the released width
# against diffusers, and the 4-step speed at the released size).
#   scripts/lora_lease.sh [WORK_DIR]   (WORK_DIR default /tmp/omnidp-lease; logs stay there)
# Needs a diffusers source tree in $DIFFUSERS_SRC (default .device/diffusers/src) and peft.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
w=$(realpath -m "${1:-/tmp/omnidp-lease}")
mkdir -p "$w"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }
export PYTHONPATH=${DIFFUSERS_SRC:-$root/.device/diffusers/src}${PYTHONPATH:+:$PYTHONPATH}
(
  python3 "$root/scripts/lora_fixtures.py" --ref "$root/tests/fixtures/diffusers-ref" --out "$w/lora-fixtures" \
    > "$w/fixtures.log" 2>&1 && tar czf "$w/lora-fixtures.tgz" -C "$w/lora-fixtures" . && stamp "fixtures written"
) &
bash "$root/scripts/build_gpu.sh" "$w/build" omni-dp-batch omni-dp-compare omni-dp-export \
  omni-dp-bench-make-snapshot > "$w/build.log" 2>&1 || { stamp "the build failed: $w/build.log"; exit 1; }
stamp "built"
wait
RUN_TIMEOUT=${RUN_TIMEOUT:-900} BENCH_OUT=$w/bench bash "$root/scripts/bench_gpu.sh" "$w/build" lora-a14b
stamp "done"

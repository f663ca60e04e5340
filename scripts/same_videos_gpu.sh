#!/usr/bin/env bash
# Proof that a refactor changed nothing for a user (one GPU): the same strict recipe videos
# through omni-dp-batch from two builds, compared hash by hash, with their request seconds.
#   scripts/same_videos_gpu.sh BEFORE_BUILD AFTER_BUILD
# Each build is a build dir of scripts/build_gpu.sh (omni-dp-batch, omni-dp-compare) of the
# tree before and after. For each layout (SAME_LAYOUTS, default "bf16 fp8 tp2 sp2 cfg2") and
# model (SAME_MODELS, default "wan hv15"): SAME_REQUESTS requests (default 1; seeds 7, 8, ...),
# determinism.strict, cuDNN attention; Wan2.2-TI2V-5B at 832x480x33 (CFG 5), HunyuanVideo-1.5
# at 848x480x33 (CFG 6), SAME_STEPS (default 30) steps, SAME_GROUP_STEPS (default SAME_STEPS)
# for the two-rank layouts, which run both ranks on GPU 0 (parallel.devices [0,0], the MPI
# backend). Weights: SAME_SNAPSHOT_WAN / SAME_SNAPSHOT_HV15, Diffusers snapshot folders
# (omni-dp-bench-make-snapshot), run from the prompt text as a user runs them; unset: seeded
# random weights. SAME_CONCURRENT_GROUPS=1 runs the before and after runs of a two-rank
# layout at the same time (their hashes stand, their seconds are then no timing). SAME_TAGS
# (default "before after") picks the builds that run; a layout is compared when both ran.
# Then omni-dp-compare BEFORE AFTER: exit 0 when every hash is equal; where one differs it
# reports the largest uint8 difference (--max-level-diff 1 passes within one level). Per run:
# each request's seconds (results.h5).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
before=${1:?before build dir}
after=${2:?after build dir}
out=${SAME_OUT:-/tmp/omnidp-same}
models=${SAME_MODELS:-wan hv15}
layouts=${SAME_LAYOUTS:-bf16 fp8 tp2 sp2 cfg2}
steps=${SAME_STEPS:-30}
group_steps=${SAME_GROUP_STEPS:-$steps}
mkdir -p "$out"
: > "$out/m.jsonl"
for ((i = 1; i <= ${SAME_REQUESTS:-1}; i++)); do
  printf '{"id": "same-%d", "prompt": "A red fox running through fresh snow", "seed": %d}\n' \
    "$i" $((6 + i)) >> "$out/m.jsonl"
done

run_one() {  # build tag model layout
  local bin=$1/bin tag=$2 model=$3 layout=$4 n=1
  local snapshot=${SAME_SNAPSHOT_WAN:-}
  [ "$model" = hv15 ] && snapshot=${SAME_SNAPSHOT_HV15:-}
  local cfg sets=(--set model.attention=cudnn --set determinism.strict=true --no-resume
    --set input.manifest="$out/m.jsonl" --set output.dir="$out/$tag/$model-$layout")
  if [ -n "$snapshot" ]; then
    sets+=(--set model.weights=pretrained --set model.path="$snapshot")
  else
    sets+=(--set model.weights=random --set 'model.path=""')
  fi
  case $model in
    wan) cfg=(--config "$root/configs/wan22-ti2v-5b.yaml" --set generation.width=832
           --set generation.height=480 --set generation.num_frames=33 --set generation.guidance_scale=5) ;;
    hv15) cfg=(--config "$root/configs/hv15.yaml" --set generation.width=848
            --set generation.height=480 --set generation.num_frames=33 --set generation.guidance_scale=6) ;;
  esac
  local layout_steps=$steps
  case $layout in tp2 | sp2 | cfg2) layout_steps=$group_steps ;; esac
  sets+=(--set generation.num_inference_steps="$layout_steps")
  case $layout in
    bf16) ;;
    fp8) sets+=(--set model.quantization=fp8) ;;
    tp2) n=2; sets+=(--set parallel.tensor_parallel_size=2) ;;
    sp2) n=2; sets+=(--set parallel.sequence_parallel_size=2) ;;
    cfg2) n=2; sets+=(--set parallel.cfg_parallel_size=2) ;;
  esac
  ((n > 1)) && sets+=(--set 'parallel.devices=[0,0]')
  rm -rf "${out:?}/$tag/$model-$layout"
  local launch=()
  ((n > 1)) && launch=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n")
  echo "== $tag $model $layout ($layout_steps steps${snapshot:+, snapshot $snapshot})"
  timeout 900 "${launch[@]}" "$bin/omni-dp-batch" "${cfg[@]}" "${sets[@]}" > "$out/$tag-$model-$layout.log" 2>&1 ||
    { echo "FAILED (exit $?): tail of $out/$tag-$model-$layout.log"; tail -5 "$out/$tag-$model-$layout.log"; }
  python3 - "$out/$tag/$model-$layout" <<'PY'
import sys, h5py
try:
    rows = h5py.File(sys.argv[1] + "/results.h5", "r")["requests"][:]
except Exception as e:  # noqa: BLE001 - a failed run has no results
    print(f"   no results: {e}"); sys.exit(0)
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
for r in rows:
    print(f"   {sys.argv[1].split('/')[-2]} {text(r['id'])} status {int(r['status'])} request {r['seconds']:.3f} s "
          f"sha256 {text(r['video_sha256'])[:16]}")
PY
}

for layout in $layouts; do
  for model in $models; do
    if [ "${SAME_CONCURRENT_GROUPS:-0}" = 1 ] && [[ $layout =~ ^(tp2|sp2|cfg2)$ ]]; then
      run_one "$before" before "$model" "$layout" > "$out/run-before-$model-$layout.txt" &
      run_one "$after" after "$model" "$layout" > "$out/run-after-$model-$layout.txt"
      wait
      cat "$out/run-before-$model-$layout.txt" "$out/run-after-$model-$layout.txt"
    else
      for tag in ${SAME_TAGS:-before after}; do
        build=$before; [ "$tag" = after ] && build=$after
        run_one "$build" "$tag" "$model" "$layout"
      done
    fi
    [ -d "$out/before/$model-$layout" ] && [ -d "$out/after/$model-$layout" ] || continue
    echo "-- compare $model $layout:"
    "$after/bin/omni-dp-compare" "$out/before/$model-$layout" "$out/after/$model-$layout" \
      --max-level-diff 1 2>&1 | tail -4
  done
done

#!/usr/bin/env bash
# The GPU figures of docs/performance.md, on one GPU (the H200 of the device machine):
# Wan2.2-TI2V-5B and HunyuanVideo-1.5 with their real configs and seeded random weights, bf16.
#   scripts/bench_gpu.sh [build-dir] [part...]
# parts (default: wan request hv15 e2e e2e-strict):
#   wan        transformer forward at 832x480x33 and 1280x704x121, batch 1 and 2 (libtorch's SDPA choice and
#              cuDNN attention), VAE decode at both sizes in both weight layouts
#   wan-eager  the same forward on the Diffusers-equivalent eager path (--eager)
#   request    the reference server's recipe: 832x480x33, 30 steps, CFG 5, VAE decode: sampling
#              alone (cuDNN autotuning off, then on) and the product's generate()
#   hv15       HunyuanVideo-1.5 forward at 832x480x33 and 848x480x121, fused and eager; one
#              request at 832x480x33 (30 steps, CFG 6) and its VAE decode
#   e2e        omni-dp-batch on 12 requests of the recipe (two repeated under other ids: their
#              hashes must agree); peak GPU memory from nvidia-smi
#   e2e-strict the same with determinism.strict: true, 8 requests
#   e2e-offload the e2e part with model.offload_text_encoder: true (the encoder moved per request)
#   e2e-fp8    the e2e part with model.quantization: fp8, 8 requests
#   cache      step caching (generation.cache): the strict Wan recipe (8 requests) and one
#              HunyuanVideo-1.5 848x480x121 50-step request per policy (off, taylorseer, magcache with
#              fixed ratios, first_block at 0.05/0.1/0.2): median seconds, forwards computed, and
#              omni-dp-compare against the uncached videos (PSNR, largest uint8 difference);
#              CACHE_WAN_POLICIES / CACHE_HV15_POLICIES pick policies by index (0 = off, first)
#   cache-presets  issue 56's goals: HunyuanVideo-1.5 848x480x121 50 steps (tiled decode), the Wan2.2-
#              TI2V-5B recipe (8 requests) and Wan2.2-T2V-A14B 832x480x81 40 steps, each uncached and
#              with magcache's preset at the authors' operating point: forwards computed, seconds,
#              omni-dp-compare against the uncached videos (CACHE_PRESET_MODELS picks)
#   wan-snapshot  omni-dp-bench-make-snapshot --model wan: the released Wan2.2-TI2V-5B architecture with UMT5-XXL,
#              seeded random weights in the Diffusers layout, into $BENCH_WAN_SNAPSHOT (once; about 21 GB)
#   wan-load   the model load from that snapshot (load_seconds, peak host memory): one process, then
#              LOAD_RANKS (default 4) processes at once on this one GPU; then one process and
#              LOAD_OFFLOAD_RANKS (default 8) at once with the text encoder in host memory (8 whole
#              pipelines do not fit on one GPU), with 16 threads each and with the cores shared out
#   wan-fp8    fp8 against bf16 on that snapshot: forward and request speed, then one video each through
#              omni-dp-batch and omni-dp-compare --min-psnr 35
#   hv15-i2v   HunyuanVideo-1.5 image-to-video from a snapshot folder: omni-dp-bench-make-snapshot writes
#              the released I2V architecture (transformer, VAE, Qwen2.5-VL + byT5, SigLIP) with seeded
#              random weights in the Diffusers layout (once, into $BENCH_SNAPSHOT), then omni-dp-batch
#              runs one 848x480, 33-frame, 30-step bf16 I2V request with weights: pretrained; seconds,
#              load time and peak GPU memory
#   hv15-diffusers  the same snapshot (and a T2V snapshot of links to it) through omni-dp-batch and through
#              diffusers' HunyuanVideo15ImageToVideoPipeline / HunyuanVideo15Pipeline, fp32 (TF32 off), one
#              request each (HV15_REF_FRAMES frames, HV15_REF_STEPS steps; I2V at the image's bucket, T2V
#              848x480; HV15_REF_TASKS picks): largest uint8 difference and PSNR. Needs a diffusers source tree in
#              $DIFFUSERS_SRC (default .device/diffusers/src); then diffusers' own bf16 error on the
#              diffusers-ref pipeline cases (OMNIDP_SHARED_DIR/fixtures), the yardstick of the bf16 bounds
#   wan-diffusers  Wan2.2-TI2V-5B from prompt text through omni-dp-batch and through diffusers' WanPipeline,
#              fp32 (TF32 off), on a snapshot whose tokenizer is the reference data's 32k Unigram model
#              (nmt_nfkc; tests/models/text/data/sentencepiece): both tokenizers' ids of each
#              prompt, then per video the largest uint8 difference and the PSNR. WAN_REF_STEPS (10),
#              WAN_REF_FRAMES (17), WAN_REF_SIZE (480x320); needs $DIFFUSERS_SRC as hv15-diffusers does
#   wan-family-diffusers  the Wan family at the released widths against diffusers' own pipeline from
#              the same snapshot folder (omni-dp-bench-make-snapshot --variant, seeded random
#              weights, WAN_FAMILY_LAYERS (4) blocks per transformer, UMT5-XXL with 2 layers, the
#              32k Unigram tokenizer): Wan2.2-T2V-A14B (two experts, CFG 4 then 3), Wan2.2-I2V-A14B
#              (CFG 3.5) and Wan2.1-I2V-14B (CLIP ViT-H/14, CFG 5), prompt (and image) to video
#              through omni-dp-batch, fp32 with TF32 off, shift 3 (the snapshots'); per video the
#              largest uint8 difference and the PSNR; wan2.2-i2v-a14b-flf2v is the I2V snapshot
#              with a last_image (first-last-frame to video). WAN_FAMILY (the variants), WAN_REF_STEPS (10),
#              WAN_REF_FRAMES (17), WAN_REF_SIZE (480x320); needs $DIFFUSERS_SRC as hv15-diffusers
#   strict     the cost of determinism.strict on the Wan recipe (forward batch 2, request): strict off; strict;
#              strict as it was before (libtorch's NaN fill of new tensors on, flash attention: libtorch
#              refuses cuDNN attention under deterministic algorithms)
#   hv15-fp8   HunyuanVideo-1.5 forward at 832x480x33 and 848x480x121, batch 1 and 2 (CFG as one batch),
#              bf16 then FP8; one 832x480x33 request (30 steps, CFG 6) each, the FP8 video's PSNR
#   hv15-fp8-batch  HunyuanVideo-1.5 t2v at 832x480x33 (30 steps, CFG 6), random weights, one video in bf16 and
#              one in model.quantization fp8 through omni-dp-batch, compared by omni-dp-compare --min-psnr 35
#   vae-chunk  the Wan VAE decode at 832x480x33 and 1280x704x121 with 1, 2, 3 and 5 latent frames per causal
#              step (VAE_CHUNKS), time, peak GPU memory and the largest difference from the first chunking
#   a14b       Wan2.2-T2V-A14B's recipe through omni-dp-batch: 832x480x81, A14B_STEPS (40) steps, CFG 4 then
#              3, both experts at full size with seeded random weights (bf16, strict, cuDNN attention),
#              one request; the peak GPU memory nvidia-smi saw
#   a14b-swap  model.expert_residency resident against swap: a Wan2.2-T2V-A14B snapshot at the released width
#              with SWAP_LAYERS (10) blocks per expert (omni-dp-bench-make-snapshot, once, into
#              $BENCH_SWAP_SNAPSHOT), two requests of 832x480x81, 6 steps, shift 3, each way: request seconds,
#              each move's seconds from the log, peak GPU memory, and omni-dp-compare of the two runs
#   a14b-layouts  Wan2.2-T2V-A14B at the released width (the wan-family-diffusers snapshot:
#              WAN_FAMILY_LAYERS (4) blocks per expert, UMT5-XXL with 2 layers): one request
#              (A14B_LAYOUT_SIZE 832x480x33, A14B_LAYOUT_STEPS 10, CFG 4 then 3, shift 12, strict,
#              cuDNN attention) through omni-dp-batch in bf16 alone, then each of A14B_LAYOUTS
#              (fp8 cfg2 sp2 tp2; the two-rank ones on this one GPU, parallel.devices [0,0], the
#              MPI backend) compared with it by omni-dp-compare --min-psnr 35 (the largest uint8
#              difference and the PSNR); then one expert's forward at 832x480x81, batch 2 (a CFG
#              step), strict, cuDNN attention, bf16 against fp8: seconds per block
#   lora-a14b  LoRA on Wan2.2-T2V-A14B (issue 53): (LORA_CHECK=1) a Lightning-shaped pair
#              (scripts/make_lora.py: rank 64, alpha keys, one file per expert, seeded) on the
#              wan-family-diffusers snapshot (WAN_FAMILY_LAYERS blocks), 4 steps, guidance 1, fp32
#              with TF32 off, through omni-dp-batch (model.lora, HIGH -> high_noise, LOW ->
#              low_noise) and diffusers' load_lora_weights (load_into_transformer_2 for LOW):
#              largest uint8 difference and PSNR; then the speed at the released size (LORA_FULL=1:
#              both experts' 40 blocks, seeded random weights, bf16, strict, cuDNN, 832x480x81, 4
#              steps, guidance 1): one job of 2 x LORA_REQUESTS (8) lines with the pair as each
#              line's "lora", half at one scale, half at 4 scales interleaved line by line: request
#              seconds each, each half's sum and their ratio, the adapter switches from the log
#   hv15-variants-diffusers  the released HunyuanVideo-1.5 variants (omni-dp-bench-make-snapshot
#              --variant, HV15_VARIANT_LAYERS (8) blocks at the released width, Qwen2.5-VL with 2
#              layers, seeded random weights) through omni-dp-batch with the variant's YAML and
#              through diffusers' own pipeline from the same folder, fp32 with TF32 off, the
#              snapshot's guidance and shift: HV15_VARIANTS (480p_t2v_distilled: one forward a
#              step, no negative prompt; 480p_i2v_step_distilled: MeanFlow's timestep_r, 8 steps;
#              720p_i2v: the 960 bucket, 1280x720); HV15_REF_FRAMES (9) frames, HV15_REF_STEPS
#              (10) steps where the recipe does not fix them; largest uint8 difference and PSNR
#   hv15-121   the HunyuanVideo-1.5 recipe through omni-dp-batch: 848x480, 121 frames, 50 steps, CFG 6, one
#              request, random weights, HV15_QUANT (default none) quantization
#   key-padding  the joint attention's keys padded to a multiple of 128 for cuDNN (layers/attention.hpp)
#              against unaligned keys: its GPU test, HunyuanVideo-1.5 batch-2 forwards at 832x480x33 and
#              848x480x121 and a request (30 steps, CFG 6) each way with the videos' difference
#   profile    a Kineto trace of one Wan forward per size, tabulated by profile_summary.py
#   parallel   intra-request layouts on 2, 4 and 8 GPUs (those the machine has; N > GPUs is
#              skipped): Wan2.2 recipe (832x480x33, 30 steps, CFG 5) and HV15 848x480x121 (30
#              steps, CFG 6), data-parallel only (N replicas) against CFG-parallel (groups of 2),
#              Ulysses (sp2/sp4/sp8, sp2cfg/sp4cfg) and tensor parallel (tp2/tp4/tp8) groups,
#              NCCL (PARALLEL_LAYOUTS picks): one request alone (latency: the speedup of a group over one GPU) and
#              2N requests (throughput); per-rank busy seconds from summary.json. Env
#              PARALLEL_GPUS overrides the list (e.g. "2"); PARALLEL_MODELS (default "wan hv15")
# Each benchmark prints its own figures (tokens, seconds, TFLOP/s, videos/min).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-build/gpu}
shift || true
parts=${*:-wan request hv15 e2e e2e-strict}
bin=$build/bin
out=${BENCH_OUT:-/tmp/omnidp-bench}
mkdir -p "$out"
run() { echo; echo "\$ $*"; timeout "${RUN_TIMEOUT:-420}" "$@" 2>&1 | grep -v '^$'; }
wan=("$bin/omni-dp-bench-model" --model wan2.2-ti2v-5b --device cuda --dtype bf16 --verbose)
hv=("$bin/omni-dp-bench-hv15" --device cuda --dtype bf16)
for part in $parts; do
  case $part in
    wan) run "${wan[@]}" --what forward,decode --size 832x480x33,1280x704x121 --batch 1,2 --attention auto,cudnn \
           --vae-layout channels-last,contiguous --repeat 5 ;;
    wan-eager) run "${wan[@]}" --eager --what forward --size 832x480x33,1280x704x121 --repeat 5 ;;
    request) run "${wan[@]}" --what request,generate --size 832x480x33 --steps 30 --guidance 5 --attention cudnn \
               --request-repeat 3 --cudnn-benchmark off,on ;;
    hv15) run "${hv[@]}" --what forward,request,decode --size 832x480x33,848x480x121 --attention cudnn --compare-eager \
            --repeat 2 --steps 30 --guidance 6 ;;
    strict)
      for flags in "" "--strict" "--strict --strict-nan-fill"; do
        # shellcheck disable=SC2086
        run "${wan[@]}" $flags --what forward,request --size 832x480x33 --batch 2 --steps 30 --guidance 5 \
          --attention cudnn --repeat 3 --request-repeat 2
      done
      run "${wan[@]}" --strict --strict-nan-fill --what forward --size 832x480x33 --batch 2 --attention flash --repeat 3 ;;
    hv15-fp8) run "${hv[@]}" --what forward,request --size 832x480x33,848x480x121 --batch 1,2 --attention cudnn \
                --fp8 --repeat 1 --steps 30 --guidance 6 ;;
    hv15-fp8-batch)
      printf '{"id": "fox", "prompt": "A red fox running through fresh snow", "seed": 7}\n' > "$out/hv15-fp8.jsonl"
      for q in none fp8; do
        rm -rf "$out/hv15-fp8-$q"
        run "$bin/omni-dp-batch" --config "$root/configs/hv15.yaml" --set model.weights=random --set 'model.path=""' \
          --set model.attention=cudnn --set model.quantization=$q --set generation.width=832 \
          --set generation.height=480 --set generation.num_frames=33 --set generation.num_inference_steps=30 \
          --set generation.guidance_scale=6 --set input.manifest="$out/hv15-fp8.jsonl" --set output.dir="$out/hv15-fp8-$q"
      done
      run "$bin/omni-dp-compare" "$out/hv15-fp8-none" "$out/hv15-fp8-fp8" --min-psnr 35 ;;
    vae-chunk) run "${wan[@]}" --what decode --size 832x480x33,1280x704x121 --decode-chunk "${VAE_CHUNKS:-1,2,3,5}" \
                 --repeat 3 ;;
    a14b)  # Wan2.2-T2V-A14B at the released size: 832x480x81, A14B_STEPS (40) steps, CFG 4 / 3, shift 12
      printf '{"id": "a14b", "prompt": "A red fox running through fresh snow", "seed": 7}\n' > "$out/a14b.jsonl"
      rm -rf "$out/a14b"
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$out/a14b-memory.txt" &
      smi=$!
      run "$bin/omni-dp-batch" --config "$root/configs/wan22-t2v-a14b.yaml" --set model.weights=random \
        --set 'model.path=""' --set generation.num_inference_steps="${A14B_STEPS:-40}" \
        --set input.manifest="$out/a14b.jsonl" --set output.dir="$out/a14b" --no-resume
      kill "$smi"
      echo "peak GPU memory used: $(sort -n "$out/a14b-memory.txt" | tail -1) MiB (nvidia-smi every 0.5 s)"
      ;;
    a14b-swap)
      snap=${BENCH_SWAP_SNAPSHOT:-$out/a14b-swap-snapshot}
      if [ ! -f "$snap/model_index.json" ]; then
        rm -rf "$snap"
        run "$bin/omni-dp-bench-make-snapshot" --model wan --variant wan2.2-t2v-a14b --layers "${SWAP_LAYERS:-10}" \
          --text-layers 1 --seed 3 --out "$snap" || exit 1
      fi
      du -sh "$snap/transformer" "$snap/transformer_2"
      : > "$out/a14b-swap.jsonl"
      for i in 1 2; do
        echo "{\"id\": \"swap-$i\", \"prompt\": \"A red fox running through fresh snow, take $i\", \"seed\": $i}" >> "$out/a14b-swap.jsonl"
      done
      for residency in resident swap; do
        dir=$out/a14b-$residency; rm -rf "$dir"; mkdir -p "$dir"
        nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$dir/mem.csv" &
        smi=$!
        run "$bin/omni-dp-batch" --config "$root/configs/wan22-t2v-a14b.yaml" --set model.path="$snap" \
          --set model.expert_residency=$residency --set generation.num_inference_steps=6 \
          --set generation.flow_shift=3 --set input.manifest="$out/a14b-swap.jsonl" --set output.dir="$dir/out" \
          --no-resume > "$dir/log.txt" 2>&1
        kill "$smi"
        echo "== $residency: peak GPU memory $(sort -n "$dir/mem.csv" | tail -1) MiB (nvidia-smi every 0.2 s)"
        grep -E "expert swap|load" "$dir/log.txt" | tail -8
        python3 -c 'import sys, h5py; print("request seconds", [round(float(r["seconds"]), 2) for r in h5py.File(sys.argv[1], "r")["requests"][:]])' "$dir/out/results.h5"
      done
      run "$bin/omni-dp-compare" "$out/a14b-resident/out" "$out/a14b-swap/out"
      ;;
    hv15-121)
      printf '{"id": "hv15-121", "prompt": "A red fox running through fresh snow", "seed": 7}\n' > "$out/hv15-121.jsonl"
      rm -rf "$out/hv15-121"
      run "$bin/omni-dp-batch" --config "$root/configs/hv15.yaml" --set model.weights=random --set 'model.path=""' \
        --set model.attention=cudnn --set model.quantization="${HV15_QUANT:-none}" --set generation.width=848 \
        --set generation.height=480 --set generation.num_frames=121 --set generation.num_inference_steps=50 \
        --set generation.guidance_scale=6 --set input.manifest="$out/hv15-121.jsonl" --set output.dir="$out/hv15-121"
      ;;
    key-padding)  # cuDNN attention over keys padded to a multiple of 128, corrected (layers/attention.hpp),
      # against the unaligned keys: the GPU test, HunyuanVideo-1.5 forwards and a request each way
      run "$build/tests/models/layers/layers_test" --gtest_filter='AttentionPaddedKeys*:JointAttention*:CudaKernels*'
      run "${hv[@]}" --what forward,request --size 832x480x33,848x480x121 --batch 2 --attention cudnn \
        --key-padding off,on --repeat 2 --steps 30 --guidance 6 ;;
    profile)
      run "${wan[@]}" --what forward --size 832x480x33,1280x704x121 --attention cudnn --repeat 2 --profile "$out/wan"
      for trace in "$out"/wan.*.json; do echo; echo "== $trace"; python3 "$root/scripts/profile_summary.py" "$trace" --top 15; done ;;
    wan-snapshot)  # the released Wan2.2-TI2V-5B architecture (UMT5-XXL included), seeded random weights, bf16
      snap=${BENCH_WAN_SNAPSHOT:-$out/wan-snapshot}
      [ -f "$snap/model_index.json" ] || run "$bin/omni-dp-bench-make-snapshot" --model wan --out "$snap" ;;
    wan-load)  # model load from that snapshot: one rank alone, then LOAD_RANKS processes at once on this GPU
      snap=${BENCH_WAN_SNAPSHOT:-$out/wan-snapshot}
      load=("$bin/omni-dp-bench-model" --model wan2.2-ti2v-5b --device cuda --dtype bf16 --path "$snap" --what load)
      run "${load[@]}" --verbose
      # at_once NAME N COMMAND...: N processes of COMMAND at once, their load figures and the wall time
      at_once() {
        local name=$1 n=$2 start i
        shift 2
        echo; echo "\$ $n x $* (at once)"
        start=$(date +%s.%N)
        for i in $(seq 1 "$n"); do "$@" > "$out/$name-$n-$i.txt" 2>&1 & done; wait
        echo "all $n loaded after $(awk "BEGIN { print $(date +%s.%N) - $start }") s (process start included)"
        grep -h "load_seconds\|peak_host" "$out/$name-$n-"*.txt | sort | uniq -c
      }
      for n in ${LOAD_RANKS:-4}; do at_once load "$n" "${load[@]}"; done
      # 8 whole pipelines (8 x 22.8 GB) do not fit on one GPU: with the text encoder kept in host
      # memory each process still reads the whole snapshot, and puts 11.4 GB on the GPU.
      off=("${load[@]}" --offload-text-encoder true)
      run "${off[@]}"
      for n in ${LOAD_OFFLOAD_RANKS:-8}; do
        at_once load-off "$n" "${off[@]}"
        # the same with the machine's cores shared out, as cpus-per-task does on a node
        t=$(( $(env -u OMP_NUM_THREADS nproc) / n )); ((t > 0)) || t=1
        at_once load-off-t "$n" "${off[@]}" --threads "$t"
      done ;;
    wan-fp8)  # model.quantization fp8 against bf16 on that snapshot: forward, request, and one video each through
      # omni-dp-batch, compared by omni-dp-compare --min-psnr 35
      snap=${BENCH_WAN_SNAPSHOT:-$out/wan-snapshot}
      for q in none fp8; do
        run "${wan[@]}" --path "$snap" --quantization $q --attention cudnn --what forward,request --size 832x480x33 \
          --batch 2 --repeat 3 --steps 30 --guidance 5 --request-repeat 2
      done
      printf '{"id": "fox", "prompt": "A red fox running through fresh snow", "seed": 7}\n' > "$out/fp8.jsonl"
      for q in none fp8; do
        rm -rf "$out/fp8-$q"
        run "$bin/omni-dp-batch" --config "$root/configs/wan22-ti2v-5b.yaml" --set model.path="$snap" \
          --set model.attention=cudnn --set model.quantization=$q --set generation.width=832 \
          --set generation.height=480 --set generation.num_frames=33 --set generation.num_inference_steps=30 \
          --set input.manifest="$out/fp8.jsonl" --set output.dir="$out/fp8-$q"
      done
      run "$bin/omni-dp-compare" "$out/fp8-none" "$out/fp8-fp8" --min-psnr 35 ;;
    e2e|e2e-strict|e2e-offload|e2e-fp8)  # the reference server's recipe through the product: manifest -> omni-dp-batch -> HDF5
      strict=false; count=12; offload=false; quant=none
      if [ "$part" = e2e-strict ]; then strict=true; count=8; fi
      if [ "$part" = e2e-offload ]; then offload=true; fi
      if [ "$part" = e2e-fp8 ]; then quant=fp8; count=8; fi
      manifest=$out/$part.jsonl; rm -f "$manifest.tmp"
      # The last two requests repeat the first two under other ids: their hashes must agree.
      for i in $(seq 1 $((count - 2))) 1 2; do
        id=recipe-$i; [ -n "$(grep -s "\"recipe-$i\"" "$manifest.tmp")" ] && id=recipe-$i-again
        echo "{\"id\": \"$id\", \"prompt\": \"A red fox running through fresh snow, take $i\", \"seed\": $i}" >> "$manifest.tmp"
      done
      mv "$manifest.tmp" "$manifest"
      rm -rf "$out/$part"
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$out/$part-mem.csv" &
      smi=$!
      run "$bin/omni-dp-batch" --config "$root/configs/wan22-ti2v-5b.yaml" \
        --set model.weights=random --set 'model.path=""' --set model.attention=cudnn \
        --set generation.width=832 --set generation.height=480 --set generation.num_frames=33 \
        --set generation.num_inference_steps=30 --set determinism.strict=$strict \
        --set model.offload_text_encoder=$offload --set model.quantization=$quant \
        --set input.manifest="$manifest" --set output.dir="$out/$part"
      kill $smi
      echo "peak_gpu_memory_used_mib $(sort -n "$out/$part-mem.csv" | tail -1) (nvidia-smi, whole GPU, sampled every 200 ms)"
      python3 - "$out/$part/results.h5" <<'PY'
import sys, h5py
rows = h5py.File(sys.argv[1], "r")["requests"][:]
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
sha = {}
for r in rows:
    rid, digest = text(r["id"]), text(r["video_sha256"])
    print(f"{rid:18s} {r['seconds']:7.2f} s  {digest[:16]}")
    sha[rid] = digest
for rid in sorted(sha):
    if rid.endswith("-again"):
        same = sha[rid] == sha[rid[:-len("-again")]]
        print(f"{rid}: {'same video_sha256 as' if same else 'DIFFERENT video_sha256 from'} {rid[:-len('-again')]}")
# Throughput: over the whole run (first start to last end), and steady (between the first and
# the last completion: every request after the first, with the gaps between them).
starts, ends = sorted(r["start_time"] for r in rows), sorted(r["end_time"] for r in rows)
secs = sorted(r["seconds"] for r in rows[1:]) if len(rows) > 1 else [0.0]
print(f"requests {len(rows)}  first-start-to-last-end {ends[-1] - starts[0]:.2f} s = "
      f"{60 * len(rows) / (ends[-1] - starts[0]):.2f} videos/min")
if len(rows) > 1:
    print(f"steady: {len(rows) - 1} completions in {ends[-1] - ends[0]:.2f} s = "
          f"{60 * (len(rows) - 1) / (ends[-1] - ends[0]):.2f} videos/min; "
          f"median request {secs[len(secs) // 2]:.3f} s")
PY
      ;;
    cache)  # step caching (generation.cache; docs/models.md "Step caching"): both recipes, strict
      # Wan: 8 requests of 832x480x33, 30 steps, CFG 5, per policy; HunyuanVideo-1.5: one request of
      # 848x480x121, 50 steps, CFG 6 (CACHE_HV15=0 skips it). Each cached folder is compared with the
      # uncached one (omni-dp-compare --min-psnr 1: every video's PSNR and largest uint8 difference).
      # Random weights: the fixed schedules (taylorseer, magcache with given ratios) are the speed
      # figures; first_block's skip fraction at several thresholds is no quality result.
      ratios="[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]"
      policies=("off" "taylorseer" "{policy: magcache, mag_ratios: $ratios}"
                "{policy: first_block, threshold: 0.05}" "{policy: first_block, threshold: 0.1}"
                "{policy: first_block, threshold: 0.2}")
      manifest=$out/cache.jsonl; : > "$manifest"
      for i in $(seq 1 8); do
        echo "{\"id\": \"recipe-$i\", \"prompt\": \"A red fox running through fresh snow, take $i\", \"seed\": $i}" >> "$manifest"
      done
      for model in wan hv15; do
        [ "$model" = hv15 ] && [ "${CACHE_HV15:-1}" = 0 ] && continue
        if [ "$model" = wan ]; then
          conf=(--config "$root/configs/wan22-ti2v-5b.yaml" --set generation.width=832 --set generation.height=480
                --set generation.num_frames=33 --set generation.num_inference_steps=30 --set generation.guidance_scale=5
                --set input.manifest="$manifest")
        else
          head -1 "$manifest" > "$out/cache-hv15.jsonl"
          conf=(--config "$root/configs/hv15.yaml" --set generation.width=848 --set generation.height=480
                --set generation.num_frames=121 --set generation.num_inference_steps=50 --set generation.guidance_scale=6
                --set input.manifest="$out/cache-hv15.jsonl")
        fi
        picks=${CACHE_WAN_POLICIES:-${!policies[*]}}
        [ "$model" = hv15 ] && picks=${CACHE_HV15_POLICIES:-${!policies[*]}}
        for k in $picks; do
          dir=$out/cache-$model-$k; rm -rf "$dir"
          echo "== $model generation.cache=${policies[$k]}"
          run "$bin/omni-dp-batch" "${conf[@]}" --set model.weights=random --set 'model.path=""' \
            --set model.attention=cudnn --set determinism.strict=true \
            --set "generation.cache=${policies[$k]}" --set output.dir="$dir" | grep -E "step cache|summary|videos/min|forwards" | tail -4
          python3 - "$dir/results.h5" <<'PY'
import sys, h5py
rows = h5py.File(sys.argv[1], "r")["requests"][:]
names = rows.dtype.names
secs = sorted(float(r["seconds"]) for r in rows)
line = f"requests {len(rows)}  median request {secs[len(secs) // 2]:.2f} s"
if "forwards" in names:
    f, c = sum(int(r["forwards"]) for r in rows), sum(int(r["forwards_computed"]) for r in rows)
    line += f"  forwards computed {c}/{f} (skip rate {1 - c / max(f, 1):.3f})"
print(line)
PY
          if [ "$k" != 0 ]; then
            "$bin/omni-dp-compare" "$out/cache-$model-0" "$dir" --min-psnr 1 | tail -6
          fi
        done
      done
      ;;
    cache-presets)  # issue 56's goals: each recipe uncached, then magcache with its checkpoint's preset
      # (no mag_ratios) at the authors' operating point; strict, cuDNN, seeded random weights
      # (the preset's ratios fix the schedule: the skips and seconds hold on any weights, the
      # PSNR against the uncached video says nothing of quality). CACHE_PRESET_MODELS picks.
      manifest=$out/cache-presets.jsonl; : > "$manifest"
      for i in $(seq 1 8); do
        echo "{\"id\": \"recipe-$i\", \"prompt\": \"A red fox running through fresh snow, take $i\", \"seed\": $i}" >> "$manifest"
      done
      head -1 "$manifest" > "$out/cache-presets-one.jsonl"
      for model in ${CACHE_PRESET_MODELS:-hv15 ti2v5b a14b}; do
        case $model in
          hv15)  # 848x480x121, 50 steps, CFG 6, tiled decode (80 GB); preset hunyuanvideo-1.5-40steps
            conf=(--config "$root/configs/hv15.yaml" --set generation.width=848 --set generation.height=480
                  --set generation.num_frames=121 --set generation.num_inference_steps=50
                  --set generation.guidance_scale=6 --set model.vae_tiling=true
                  --set input.manifest="$out/cache-presets-one.jsonl")
            preset="{policy: magcache, threshold: 0.03, max_skip_steps: 2, retention_ratio: 0.25}" ;;
          ti2v5b)  # the Wan recipe: 8 requests of 832x480x33, 30 steps, CFG 5; preset wan2.2-ti2v-5b-t2v
            conf=(--config "$root/configs/wan22-ti2v-5b.yaml" --set generation.width=832
                  --set generation.height=480 --set generation.num_frames=33
                  --set generation.num_inference_steps=30 --set generation.guidance_scale=5
                  --set input.manifest="$manifest")
            preset="{policy: magcache, threshold: 0.06, max_skip_steps: 2, retention_ratio: 0.2}" ;;
          a14b)  # 832x480x81, 40 steps, CFG 4 / 3, shift 12 (the YAML); preset wan2.2-t2v-a14b
            conf=(--config "$root/configs/wan22-t2v-a14b.yaml" --set generation.num_inference_steps=40
                  --set input.manifest="$out/cache-presets-one.jsonl")
            preset="{policy: magcache, threshold: 0.06, max_skip_steps: 2, retention_ratio: 0.4}" ;;
          *) echo "unknown CACHE_PRESET_MODELS entry $model"; continue ;;
        esac
        for policy in off preset; do
          dir=$out/cache-presets-$model-$policy; rm -rf "$dir"
          cache=off; [ $policy = preset ] && cache=$preset
          echo "== $model generation.cache=$cache"
          run "$bin/omni-dp-batch" "${conf[@]}" --set model.weights=random --set 'model.path=""' \
            --set model.attention=cudnn --set determinism.strict=true --set "generation.cache=$cache" \
            --set output.dir="$dir" --no-resume | grep -E "step cache|summary|videos/min" | tail -3
          python3 - "$dir/results.h5" "$model" "$policy" <<'PY'
import sys, h5py
rows = h5py.File(sys.argv[1], "r")["requests"][:]
secs = sorted(float(r["seconds"]) for r in rows)
f, c = sum(int(r["forwards"]) for r in rows), sum(int(r["forwards_computed"]) for r in rows)
print(f"| {sys.argv[2]} | {sys.argv[3]} | {c} of {f} forwards computed (skip rate {1 - c / max(f, 1):.3f}) "
      f"| median request {secs[len(secs) // 2]:.2f} s over {len(rows)} |")
PY
        done
        "$bin/omni-dp-compare" "$out/cache-presets-$model-off" "$out/cache-presets-$model-preset" \
          --min-psnr 1 | tail -4
      done
      ;;
    hv15-i2v)
      snap=${BENCH_SNAPSHOT:-$out/hv15-i2v-snapshot}
      if [ ! -f "$snap/model_index.json" ]; then
        rm -rf "$snap"; run "$bin/omni-dp-bench-make-snapshot" --out "$snap" --task i2v --seed 1 || exit 1
      fi
      du -sh "$snap"
      dir=$out/hv15-i2v; rm -rf "$dir"; mkdir -p "$dir"
      cp "$root/configs/prompts/img/sunset.png" "$dir/"
      echo '{"id": "i2v-480p", "prompt": "A sunset over the sea, waves rolling in", "image": "sunset.png", "seed": 7, "height": 480, "width": 848, "num_frames": 33}' > "$dir/m.jsonl"
      nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$dir/mem.csv" &
      smi=$!
      start=$(date +%s)
      run "$bin/omni-dp-batch" --config "$root/configs/hv15.yaml" --set model.path="$snap" \
        --set generation.num_inference_steps=30 --set input.manifest="$dir/m.jsonl" --set output.dir="$dir/out"
      echo "omni-dp-batch wall $(( $(date +%s) - start )) s (process start, snapshot hash, load, request, merge)"
      kill $smi
      echo "peak_gpu_memory_used_mib $(sort -n "$dir/mem.csv" | tail -1) (nvidia-smi, whole GPU, sampled every 200 ms)"
      "$bin/omni-dp-inspect" "$dir/out/results.h5" 2>&1 | head -30
      ;;
    wan-diffusers)
      snap=${BENCH_WAN_REF_SNAPSHOT:-$out/wan-ref-snapshot}
      if [ ! -f "$snap/model_index.json" ]; then
        rm -rf "$snap"
        run "$bin/omni-dp-bench-make-snapshot" --model wan --out "$snap" --seed 3 \
          --spiece "$root/tests/models/text/data/sentencepiece/unigram32k_nfkc.model" || exit 1
      fi
      dir=$out/wan-ref; rm -rf "$dir"; mkdir -p "$dir"
      steps=${WAN_REF_STEPS:-10}; frames=${WAN_REF_FRAMES:-17}; size=${WAN_REF_SIZE:-480x320}
      w=${size%x*}; h=${size#*x}
      prompts=("Ein Fuchs läuft durch den verschneiten Wald, über den Bäumen leuchtet das Nordlicht"
               "一只橙色的狐狸在雪地里奔跑 远处是雪山和蓝色的天空"
               "Лиса бежит по снегу под северным сиянием 🦊✨ café naïve")
      : > "$dir/m.jsonl"
      ref_args=()
      for i in "${!prompts[@]}"; do
        echo "{\"id\": \"p$i\", \"prompt\": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1], ensure_ascii=False))' "${prompts[$i]}"), \"seed\": 7, \"height\": $h, \"width\": $w, \"num_frames\": $frames}" >> "$dir/m.jsonl"
        ref_args+=(--prompt "${prompts[$i]}")
        run "$bin/omni-dp-bench-tokenizer" --tokenizer "$snap/tokenizer" --text "${prompts[$i]}"
      done
      run "$bin/omni-dp-batch" --config "$root/configs/wan22-ti2v-5b.yaml" --set model.path="$snap" --set model.dtype=fp32 \
        --set model.attention=auto --set generation.num_inference_steps=$steps --set input.manifest="$dir/m.jsonl" \
        --set output.dir="$dir/out"
      run "$bin/omni-dp-export" "$dir/out/results.h5" --format png --out "$dir/png"
      export PYTHONPATH=${DIFFUSERS_SRC:-$root/.device/diffusers/src}${PYTHONPATH:+:$PYTHONPATH}
      run python3 "$root/scripts/diffusers_reference.py" snapshot --snapshot "$snap" "${ref_args[@]}" --print-ids \
        --seed 7 --frames $frames --steps $steps --height $h --width $w --dtype fp32 --out "$dir/diffusers.npy"
      for i in "${!prompts[@]}"; do
        run python3 "$root/scripts/diffusers_reference.py" compare --ref "$dir/diffusers.$i.npy" --ours "$dir/png/p$i"
      done
      ;;
    wan-family-diffusers)
      steps=${WAN_REF_STEPS:-10}; frames=${WAN_REF_FRAMES:-17}; size=${WAN_REF_SIZE:-480x320}
      w=${size%x*}; h=${size#*x}
      prompt="A red fox running through fresh snow under the northern lights"
      export PYTHONPATH=${DIFFUSERS_SRC:-$root/.device/diffusers/src}${PYTHONPATH:+:$PYTHONPATH}
      image=$out/wan-family-image.png
      python3 -c "import numpy as np, PIL.Image; y, x = np.mgrid[0:300, 0:400]; \
PIL.Image.fromarray(np.stack([x * 255 // 400, y * 255 // 300, (x + y) * 127 // 700], -1).astype(np.uint8)).save('$image')"
      last=$out/wan-family-last.png  # the first image mirrored, darker: a different last frame
      python3 -c "import numpy as np, PIL.Image; a = np.asarray(PIL.Image.open('$image')); \
PIL.Image.fromarray((a[::-1, ::-1] * 0.6).astype(np.uint8)).save('$last')"
      for entry in ${WAN_FAMILY:-wan2.2-t2v-a14b wan2.2-i2v-a14b wan2.1-i2v-14b wan2.2-i2v-a14b-flf2v}; do
        variant=${entry%-flf2v}
        snap=$out/snap-$variant; dir=$out/ref-$entry
        if [ ! -f "$snap/model_index.json" ]; then
          rm -rf "$snap"
          run "$bin/omni-dp-bench-make-snapshot" --model wan --variant "$variant" --out "$snap" --seed 3 \
            --layers "${WAN_FAMILY_LAYERS:-4}" --text-layers 2 \
            --spiece "$root/tests/models/text/data/sentencepiece/unigram32k_nfkc.model" || continue
        fi
        rm -rf "$dir"; mkdir -p "$dir"
        # The line's own size: omni-dp takes it as given, as diffusers' pipeline does (without it an
        # image-to-video request takes the image's aspect at the YAML's area, diffusers' max_area).
        line="{\"id\": \"v\", \"prompt\": \"$prompt\", \"seed\": 7, \"height\": $h, \"width\": $w"
        ref=(--guidance-scale 5)
        case $variant in
          wan2.2-t2v-a14b) config=wan22-t2v-a14b.yaml; ref=(--guidance-scale 4 --guidance-scale-2 3) ;;
          wan2.2-i2v-a14b) config=wan22-i2v-a14b.yaml; ref=(--guidance-scale 3.5 --image "$image")
            line+=", \"image\": \"image.png\"" ;;
          wan2.1-i2v-14b) config=wan21-i2v.yaml; ref=(--guidance-scale 5 --image "$image")
            line+=", \"image\": \"image.png\"" ;;
        esac
        if [ "$entry" != "$variant" ]; then  # first-last-frame to video
          cp "$last" "$dir/last.png"; ref+=(--last-image "$last"); line+=", \"last_image\": \"last.png\""
        fi
        cp "$image" "$dir/image.png"  # a manifest's images lie in its folder
        echo "$line}" > "$dir/m.jsonl"
        run "$bin/omni-dp-batch" --config "$root/configs/$config" --set model.path="$snap" --set model.dtype=fp32 \
          --set model.attention=auto --set generation.num_inference_steps=$steps --set generation.flow_shift=3 \
          --set generation.num_frames=$frames --set generation.height=$h --set generation.width=$w \
          --set input.manifest="$dir/m.jsonl" --set output.dir="$dir/out" --no-resume
        run "$bin/omni-dp-export" "$dir/out/results.h5" --format png --out "$dir/png"
        run python3 "$root/scripts/diffusers_reference.py" snapshot --snapshot "$snap" --prompt "$prompt" "${ref[@]}" \
          --seed 7 --frames $frames --steps $steps --height $h --width $w --dtype fp32 --out "$dir/diffusers.npy"
        run python3 "$root/scripts/diffusers_reference.py" compare --ref "$dir/diffusers.npy" --ours "$dir/png/v"
      done
      ;;
    a14b-layouts)
      snap=$out/snap-wan2.2-t2v-a14b  # the wan-family-diffusers snapshot
      if [ ! -f "$snap/model_index.json" ]; then
        rm -rf "$snap"
        run "$bin/omni-dp-bench-make-snapshot" --model wan --variant wan2.2-t2v-a14b --out "$snap" --seed 3 \
          --layers "${WAN_FAMILY_LAYERS:-4}" --text-layers 2 \
          --spiece "$root/tests/models/text/data/sentencepiece/unigram32k_nfkc.model" || exit 1
      fi
      size=${A14B_LAYOUT_SIZE:-832x480x33}; w=${size%%x*}; rest=${size#*x}; h=${rest%x*}; frames=${rest#*x}
      echo '{"id": "a14b", "prompt": "A red fox running through fresh snow under the northern lights", "seed": 7}' \
        > "$out/a14b-layouts.jsonl"
      for layout in bf16 ${A14B_LAYOUTS:-fp8 cfg2 sp2 tp2}; do
        dir=$out/a14b-layout-$layout; rm -rf "$dir"
        sets=(--set model.path="$snap" --set model.attention=cudnn --set determinism.strict=true
              --set generation.num_inference_steps="${A14B_LAYOUT_STEPS:-10}" --set generation.width="$w"
              --set generation.height="$h" --set generation.num_frames="$frames"
              --set input.manifest="$out/a14b-layouts.jsonl" --set output.dir="$dir" --no-resume)
        n=1
        case $layout in
          fp8) sets+=(--set model.quantization=fp8) ;;
          cfg2) n=2; sets+=(--set parallel.cfg_parallel_size=2) ;;
          sp2) n=2; sets+=(--set parallel.sequence_parallel_size=2) ;;
          tp2) n=2; sets+=(--set parallel.tensor_parallel_size=2) ;;
        esac
        launch=()
        if ((n > 1)); then
          sets+=(--set 'parallel.devices=[0,0]')
          launch=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n")
        fi
        echo; echo "== a14b $layout ($size)"
        start=$(date +%s)
        run "${launch[@]}" "$bin/omni-dp-batch" --config "$root/configs/wan22-t2v-a14b.yaml" "${sets[@]}" | tail -3
        echo "wall $(($(date +%s) - start)) s"
        python3 - "$dir/results.h5" <<'PY'
import sys, h5py
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
for r in h5py.File(sys.argv[1], "r")["requests"][:]:
    print(f"request {float(r['seconds']):.2f} s status {int(r['status'])} sha256 {text(r['video_sha256'])[:16]}")
PY
        [ "$layout" = bf16 ] || run "$bin/omni-dp-compare" "$out/a14b-layout-bf16" "$dir" --min-psnr 35
      done
      for q in none fp8; do
        run "$bin/omni-dp-bench-model" --model wan --path "$snap" --device cuda --dtype bf16 --strict \
          --quantization $q --what forward --size 832x480x81 --batch 2 --attention cudnn --repeat 5
      done
      ;;
    lora-a14b)
      export PYTHONPATH=${DIFFUSERS_SRC:-$root/.device/diffusers/src}${PYTHONPATH:+:$PYTHONPATH}
      dir=$out/lora-a14b; rm -rf "$dir"; mkdir -p "$dir"
      prompt="A red fox running through fresh snow under the northern lights"
      if [ "${LORA_CHECK:-1}" = 1 ]; then
        snap=$out/snap-wan2.2-t2v-a14b  # the wan-family-diffusers snapshot
        layers=${WAN_FAMILY_LAYERS:-4}
        if [ ! -f "$snap/model_index.json" ]; then
          rm -rf "$snap"
          run "$bin/omni-dp-bench-make-snapshot" --model wan --variant wan2.2-t2v-a14b --out "$snap" --seed 3 \
            --layers "$layers" --text-layers 2 \
            --spiece "$root/tests/models/text/data/sentencepiece/unigram32k_nfkc.model" || exit 1
        fi
        run python3 "$root/scripts/make_lora.py" --blocks "$layers" --seed 1 --out "$dir/lightning_HIGH.safetensors"
        run python3 "$root/scripts/make_lora.py" --blocks "$layers" --seed 2 --out "$dir/lightning_LOW.safetensors"
        echo "{\"id\": \"v\", \"prompt\": \"$prompt\", \"seed\": 7, \"height\": 320, \"width\": 480}" > "$dir/m.jsonl"
        pair="[{path: $dir/lightning_HIGH.safetensors, expert: high_noise}, {path: $dir/lightning_LOW.safetensors, expert: low_noise}]"
        for with in none pair; do
          lora=(); [ $with = pair ] && lora=(--set "model.lora=$pair")
          run "$bin/omni-dp-batch" --config "$root/configs/wan22-t2v-a14b.yaml" --set model.path="$snap" \
            --set model.dtype=fp32 --set model.attention=auto --set generation.num_inference_steps=4 \
            --set generation.guidance_scale=1 --set generation.guidance_scale_2=1 --set generation.flow_shift=3 \
            --set generation.num_frames=17 --set generation.height=320 --set generation.width=480 "${lora[@]}" \
            --set input.manifest="$dir/m.jsonl" --set output.dir="$dir/out-$with" --no-resume | tail -4
          run "$bin/omni-dp-export" "$dir/out-$with/results.h5" --format png --out "$dir/png-$with"
        done
        run python3 "$root/scripts/diffusers_reference.py" snapshot --snapshot "$snap" --prompt "$prompt" \
          --guidance-scale 1 --guidance-scale-2 1 --lora "$dir/lightning_HIGH.safetensors:1:high_noise" \
          --lora "$dir/lightning_LOW.safetensors:1:low_noise" --seed 7 --frames 17 --steps 4 --height 320 \
          --width 480 --dtype fp32 --out "$dir/diffusers.npy"
        echo "== omni-dp with the pair against diffusers with the pair"
        run python3 "$root/scripts/diffusers_reference.py" compare --ref "$dir/diffusers.npy" --ours "$dir/png-pair/v"
        echo "== omni-dp without adapters against diffusers with the pair (must differ)"
        run python3 "$root/scripts/diffusers_reference.py" compare --ref "$dir/diffusers.npy" --ours "$dir/png-none/v"
      fi
      if [ "${LORA_FULL:-1}" = 1 ]; then
        # The released size: one job of 2 x LORA_REQUESTS (8) lines, each with the pair as its
        # "lora" (beside the layers): the "one-set" lines all at scale 1, the "four-sets" lines at
        # 4 scales interleaved line by line (the scheduler's default order groups lines by set).
        run python3 "$root/scripts/make_lora.py" --blocks 40 --seed 1 --out "$dir/full_HIGH.safetensors"
        run python3 "$root/scripts/make_lora.py" --blocks 40 --seed 2 --out "$dir/full_LOW.safetensors"
        : > "$dir/full.jsonl"
        for i in $(seq 1 "${LORA_REQUESTS:-8}"); do
          for group in one-set four-sets; do
            s=1.0; [ $group = four-sets ] && s=$(python3 -c "print([1.0, 0.9, 0.8, 0.7][$i % 4])")
            echo "{\"id\": \"$group-$i\", \"prompt\": \"$prompt, take $i\", \"seed\": $i, \"lora\": [{\"path\": \"full_HIGH.safetensors\", \"scale\": $s}, {\"path\": \"full_LOW.safetensors\", \"scale\": $s}]}" >> "$dir/full.jsonl"
          done
        done
        nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$dir/mem.csv" &
        smi=$!
        run "$bin/omni-dp-batch" --config "$root/configs/wan22-t2v-a14b.yaml" --set model.weights=random \
          --set 'model.path=""' --set model.attention=cudnn --set determinism.strict=true \
          --set generation.num_inference_steps=4 --set generation.guidance_scale=1 \
          --set generation.guidance_scale_2=1 --set input.manifest="$dir/full.jsonl" \
          --set output.dir="$dir/full" --no-resume > "$dir/full.log" 2>&1
        kill "$smi"
        echo "peak GPU memory $(sort -n "$dir/mem.csv" | tail -1) MiB"
        grep -E "lora: switched|loaded on" "$dir/full.log" | tail -12
        python3 - "$dir/full/results.h5" <<'PY'
import sys, h5py
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
rows = sorted(h5py.File(sys.argv[1], "r")["requests"][:], key=lambda r: float(r["start_time"]))
for r in rows:
    print(f"{text(r['id']):14s} request {float(r['seconds']):.2f} s status {int(r['status'])}")
sums = {}
for r in rows:
    group = text(r["id"]).rsplit("-", 1)[0]
    sums[group] = sums.get(group, 0.0) + float(r["seconds"])
for group, total in sums.items():
    print(f"{group}: {total:.2f} s in all")
if len(sums) == 2:
    print(f"four-sets / one-set: {sums['four-sets'] / sums['one-set']:.4f}")
PY
      fi
      ;;
    hv15-variants-diffusers)
      export PYTHONPATH=${DIFFUSERS_SRC:-$root/.device/diffusers/src}${PYTHONPATH:+:$PYTHONPATH}
      prompt='A neon sign that reads "OPEN" above a door at sunset, waves rolling in'
      for variant in ${HV15_VARIANTS:-480p_t2v_distilled 480p_i2v_step_distilled 720p_i2v}; do
        snap=$out/snap-hv15-$variant; dir=$out/hv15-ref-$variant
        if [ ! -f "$snap/model_index.json" ]; then
          rm -rf "$snap"
          run "$bin/omni-dp-bench-make-snapshot" --model hv15 --variant "$variant" --out "$snap" --seed 1 \
            --layers "${HV15_VARIANT_LAYERS:-8}" --text-layers 2 || continue
        fi
        rm -rf "$dir"; mkdir -p "$dir"
        frames=${HV15_REF_FRAMES:-9}; steps=${HV15_REF_STEPS:-10}
        case $variant in
          480p_t2v_distilled) config=hv15-480p-t2v-distilled.yaml ;;
          480p_i2v_step_distilled) config=hv15-480p-i2v-step-distilled.yaml; steps=8 ;;
          720p_i2v) config=hv15-720p-i2v.yaml; frames=5 ;;
          *) config=hv15.yaml ;;
        esac
        if [[ $variant == *t2v* ]]; then
          extra=(--height 480 --width 848); line="\"height\": 480, \"width\": 848"
        else
          cp "$root/configs/prompts/img/sunset.png" "$dir/"
          extra=(--image "$dir/sunset.png"); line="\"image\": \"sunset.png\""
        fi
        echo "{\"id\": \"ref\", \"prompt\": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$prompt"), $line, \"seed\": 7, \"num_frames\": $frames}" > "$dir/m.jsonl"
        echo; echo "== hv15 $variant ($config, $steps steps, $frames frames)"
        run "$bin/omni-dp-batch" --config "$root/configs/$config" --set model.path="$snap" --set model.dtype=fp32 \
          --set model.attention=auto --set generation.num_inference_steps=$steps --set input.manifest="$dir/m.jsonl" \
          --set output.dir="$dir/out" --no-resume | tail -3
        "$bin/omni-dp-inspect" "$dir/out/results.h5" 2>&1 | grep -i -E 'guidance|shift|forwards|size|frames' | head -6
        run "$bin/omni-dp-export" "$dir/out/results.h5" --format png --out "$dir/png"
        run python3 "$root/scripts/diffusers_reference.py" snapshot --snapshot "$snap" "${extra[@]}" --prompt "$prompt" \
          --seed 7 --frames $frames --steps $steps --dtype fp32 --out "$dir/diffusers.npy"
        run python3 "$root/scripts/diffusers_reference.py" compare --ref "$dir/diffusers.npy" --ours "$dir/png/ref"
        [ -n "${HV15_VARIANT_KEEP:-}" ] || rm -rf "$snap"
      done
      ;;
    hv15-diffusers)
      snap=${BENCH_SNAPSHOT:-$out/hv15-i2v-snapshot}
      if [ ! -f "$snap/model_index.json" ]; then
        rm -rf "$snap"; run "$bin/omni-dp-bench-make-snapshot" --out "$snap" --task i2v --seed 1 || exit 1
      fi
      # The T2V checkpoint differs in transformer/config.json's task_type and model_index.json only.
      t2v=$out/hv15-t2v-snapshot; rm -rf "$t2v"; mkdir -p "$t2v/transformer"
      for part in vae text_encoder text_encoder_2 tokenizer tokenizer_2 scheduler guider; do ln -s "$snap/$part" "$t2v/$part"; done
      for f in "$snap"/transformer/*.safetensors*; do ln -s "$f" "$t2v/transformer/"; done
      sed 's/"task_type": *"i2v"/"task_type":"t2v"/' "$snap/transformer/config.json" > "$t2v/transformer/config.json"
      python3 -c "import json,sys; j=json.load(open(sys.argv[1])); j['_class_name']='HunyuanVideo15Pipeline'; [j.pop(k) for k in ('image_encoder','feature_extractor')]; json.dump(j, open(sys.argv[2],'w'), indent=2)" \
        "$snap/model_index.json" "$t2v/model_index.json"
      frames=${HV15_REF_FRAMES:-9}; steps=${HV15_REF_STEPS:-10}
      prompt='A neon sign that reads "OPEN" above a door at sunset, waves rolling in'
      export PYTHONPATH=${DIFFUSERS_SRC:-$root/.device/diffusers/src}${PYTHONPATH:+:$PYTHONPATH}
      for task in ${HV15_REF_TASKS:-i2v t2v}; do
        dir=$out/hv15-ref-$task; rm -rf "$dir"; mkdir -p "$dir"
        cp "$root/configs/prompts/img/sunset.png" "$dir/"
        s=$snap; extra=(--image "$dir/sunset.png"); line="\"image\": \"sunset.png\""
        if [ $task = t2v ]; then s=$t2v; extra=(--height 480 --width 848); line="\"height\": 480, \"width\": 848"; fi
        echo "{\"id\": \"ref-$task\", \"prompt\": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$prompt"), $line, \"seed\": 7, \"num_frames\": $frames}" > "$dir/m.jsonl"
        run "$bin/omni-dp-batch" --config "$root/configs/hv15.yaml" --set model.path="$s" --set model.dtype=fp32 \
          --set model.attention=auto --set generation.num_inference_steps=$steps --set input.manifest="$dir/m.jsonl" \
          --set output.dir="$dir/out"
        run "$bin/omni-dp-export" "$dir/out/results.h5" --format png --out "$dir/png"
        run python3 "$root/scripts/diffusers_reference.py" snapshot --snapshot "$s" "${extra[@]}" --prompt "$prompt" \
          --seed 7 --frames $frames --steps $steps --dtype fp32 --out "$dir/diffusers.npy"
        run python3 "$root/scripts/diffusers_reference.py" compare --ref "$dir/diffusers.npy" --ours "$dir/png/ref-$task"
      done
      if [ -n "${OMNIDP_SHARED_DIR:-}" ]; then
        for dtype in fp32 bf16; do
          run python3 "$root/scripts/diffusers_reference.py" fixtures --fixtures "$OMNIDP_SHARED_DIR/fixtures" --dtype $dtype
        done
      fi
      ;;
    parallel)
      gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
      for model in ${PARALLEL_MODELS:-wan hv15}; do
        if [ "$model" = wan ]; then
          cfg=(--config "$root/configs/wan22-ti2v-5b.yaml" --set generation.width=832 --set generation.height=480
               --set generation.num_frames=33 --set generation.guidance_scale=5.0)
        else
          cfg=(--config "$root/configs/hv15.yaml" --set generation.width=848 --set generation.height=480
               --set generation.num_frames=121 --set generation.guidance_scale=6.0)
        fi
        cfg+=(--set model.weights=random --set 'model.path=""' --set model.attention=cudnn
              --set generation.num_inference_steps=30 --no-resume)
        for n in ${PARALLEL_GPUS:-2 4 8}; do
          if [ "$n" -gt "$gpus" ]; then echo "parallel: $model on $n GPUs skipped ($gpus on this machine)"; continue; fi
          for count in 1 $((2 * n)); do
            manifest=$out/parallel-$model-$n-$count.jsonl; : > "$manifest"
            for i in $(seq 1 "$count"); do
              echo "{\"id\": \"p-$i\", \"prompt\": \"A red fox running through fresh snow, take $i\", \"seed\": $i}" >> "$manifest"
            done
            # dp: N replicas; cfg: groups of 2; sp<k>: Ulysses groups of k; tp<k>: tensor-parallel
            # groups of k; sp<k>cfg: Ulysses k x CFG 2 (groups of 2k). Layouts larger than N skipped.
            for layout in ${PARALLEL_LAYOUTS:-dp cfg sp2 sp4 sp8 tp2 tp4 tp8 sp2cfg sp4cfg}; do
              sets=(--set input.manifest="$manifest")
              size=1
              case $layout in
                cfg) sets+=(--set parallel.cfg_parallel_size=2); size=2 ;;
                sp*cfg) k=${layout#sp}; k=${k%cfg}; size=$((2 * k))
                        sets+=(--set parallel.sequence_parallel_size=$k --set parallel.cfg_parallel_size=2) ;;
                sp*) k=${layout#sp}; size=$k; sets+=(--set parallel.sequence_parallel_size=$k) ;;
                tp*) k=${layout#tp}; size=$k; sets+=(--set parallel.tensor_parallel_size=$k) ;;
              esac
              if [ "$size" -gt "$n" ]; then continue; fi
              dir=$out/parallel-$model-$n-$count-$layout; rm -rf "$dir"
              echo; echo "== parallel $model: $layout on $n GPU(s), $count request(s)"
              start=$(date +%s.%N)
              run mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" \
                "$bin/omni-dp-batch" "${cfg[@]}" "${sets[@]}" --set output.dir="$dir"
              echo "wall $(awk "BEGIN { print $(date +%s.%N) - $start }") s"
              python3 - "$dir/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"makespan {s['makespan_s']:.2f} s, {s['videos_per_min']:.2f} videos/min, latency p50 {s['latency_p50_s']:.2f} s, "
      f"efficiency {100 * s['scheduling_efficiency']:.1f}%, busy s per rank {[round(b, 1) for b in s['busy_s_per_rank']]}")
PY
            done
          done
        done
      done ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done

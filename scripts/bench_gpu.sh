#!/usr/bin/env bash
# The GPU figures of docs/performance.md, on one GPU (the H200 of the device machine):
# Wan2.2-TI2V-5B and HunyuanVideo-1.5 with their real configs and seeded random weights, bf16.
#   scripts/bench_gpu.sh [build-dir] [part...]   parts: wan hv15 request (default: all)
# Each benchmark prints its own figures (tokens, seconds, TFLOP/s, videos/min).
set -uo pipefail
build=${1:-build/gpu}
shift || true
parts=${*:-wan hv15 request}
bin=$build/bin
run() { echo; echo "\$ $*"; timeout 300 "$@" 2>&1 | grep -v '^$'; }
for part in $parts; do
  case $part in
    wan)
      run "$bin/omni-dp-bench-model" --model wan2.2-ti2v-5b --device cuda --dtype bf16 --what forward,decode --size 832x480x33 --repeat 5
      run "$bin/omni-dp-bench-model" --model wan2.2-ti2v-5b --device cuda --dtype bf16 --what forward,decode --size 1280x704x121 --repeat 5 ;;
    hv15)
      run "$bin/omni-dp-bench-hv15" --device cuda --dtype bf16 --what forward --size 832x480x33 --repeat 5
      run "$bin/omni-dp-bench-hv15" --device cuda --dtype bf16 --what forward --size 848x480x121 --repeat 3 ;;
    request)  # the reference server's recipe: 832x480, 33 frames, 30 steps, CFG
      run "$bin/omni-dp-bench-model" --model wan2.2-ti2v-5b --device cuda --dtype bf16 --what request --size 832x480x33 --steps 30 --guidance 5 --request-repeat 2 ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done

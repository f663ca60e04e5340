#!/usr/bin/env bash
# Builds omni-dp on the GPU machine: Ubuntu 24.04 with PyTorch 2.11 (CUDA 13) whose libtorch
# is found through python3, Open MPI 4.1, HDF5 1.10, nvcc 13, targeting Hopper (sm_90).
# Usage: scripts/build_gpu.sh [build-dir] [target...]   (default build/gpu, every target)
# OMNIDP_SHARED_DIR may point at a copy of shared/ (the fixtures) when ../shared is absent.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/gpu}
shift || true
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
shared=${OMNIDP_SHARED_DIR:-$root/../shared}
export PATH=/usr/local/cuda/bin:$PATH
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 \
  -DOMNIDP_SHARED_DIR="$shared"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" "${targets[@]}" -- -k 0 -j"$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
echo "built in $build"

#!/usr/bin/env bash
# Builds omni-dp on the GPU machine: Ubuntu 24.04 with PyTorch 2.11 (CUDA 13) whose libtorch
# is found through python3, Open MPI 4.1, HDF5 1.10, nvcc 13, targeting Hopper (sm_90).
# Usage: scripts/build_gpu.sh [build-dir] [target...]   (default build/gpu, every target)
# OMNIDP_SHARED_DIR may point at a copy of shared/ (the fixtures) when ../shared is absent.
# OMNIDP_UNITY_BUILD=ON unity-builds the libraries as the CPU presets do (default OFF here: the
# CUDA-only sources have not been built that way yet; 16 cores need it less).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(realpath -m "${1:-$root/build/gpu}")
shift || true
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
shared=${OMNIDP_SHARED_DIR:-$root/../shared}
export PATH=/usr/local/cuda/bin:$PATH
# The Qwen2 (HunyuanVideo-1.5) tokenizer needs PCRE2; that machine has libpcre2-8.so.0 (10.42) but
# no libpcre2-dev. OMNIDP_PCRE2_INCLUDE=<folder holding pcre2.h> (Debian 12's, also 10.42) makes a
# pkg-config file for the system library in the build folder.
if [ -n "${OMNIDP_PCRE2_INCLUDE:-}" ] && ! pkg-config --exists libpcre2-8; then
  lib=$(ls /usr/lib/*/libpcre2-8.so.0 2>/dev/null | head -1)
  mkdir -p "$build/pcre2/lib/pkgconfig"
  ln -sf "$lib" "$build/pcre2/lib/libpcre2-8.so"
  printf 'Name: libpcre2-8\nDescription: PCRE2 8-bit (system library)\nVersion: 10.42\nLibs: -L%s -lpcre2-8\nCflags: -I%s\n' \
    "$build/pcre2/lib" "$OMNIDP_PCRE2_INCLUDE" > "$build/pcre2/lib/pkgconfig/libpcre2-8.pc"
  export PKG_CONFIG_PATH=$build/pcre2/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
fi
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 \
  -DOMNIDP_SHARED_DIR="$shared" \
  -DOMNIDP_UNITY_BUILD="${OMNIDP_UNITY_BUILD:-OFF}"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" "${targets[@]}" -- -k 0 -j"$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
echo "built in $build"

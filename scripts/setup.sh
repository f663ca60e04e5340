#!/usr/bin/env bash
# Shared by scripts/test.sh and scripts/demo.sh: installs the Debian 12 packages omni-dp needs
# (skipped when all are present), then configures and builds one CMake preset.
#   scripts/setup.sh [PRESET] [TARGET...]     (PRESET: release | debug | asan; default release)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# What omni-dp-batch needs to build and run (the demo installs only these)...
OMNIDP_BUILD_PACKAGES=(
  g++ cmake ninja-build pkg-config
  libtorch-dev libopenblas0-pthread
  libopenmpi-dev openmpi-bin
  libhdf5-dev hdf5-tools
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libfmt-dev
  libssl-dev libpng-dev libjpeg-dev libpcre2-dev
)
# ...and what the test suite adds: GoogleTest, MP4/GIF export (FFmpeg), the metrics textfile's
# parser, the HTML report's headless browser, the format check.
OMNIDP_TEST_PACKAGES=(
  libgtest-dev
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev
  python3-prometheus-client chromium clang-format
)
OMNIDP_PACKAGES=("${OMNIDP_BUILD_PACKAGES[@]}" "${OMNIDP_TEST_PACKAGES[@]}")

# The machine's cores. (GNU nproc honours OMP_NUM_THREADS, which the test command sets to 1
# for the test ranks: a plain `nproc` there would build on one core.)
omnidp_cores() { env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc; }

# omnidp_install_packages [build]: every package, or (build) only OMNIDP_BUILD_PACKAGES.
omnidp_install_packages() {
  local missing=() pkg wanted=("${OMNIDP_PACKAGES[@]}")
  if [[ "${1:-}" == build ]]; then wanted=("${OMNIDP_BUILD_PACKAGES[@]}"); fi
  for pkg in "${wanted[@]}"; do
    if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]]; then
      missing+=("$pkg")
    fi
  done
  if ((${#missing[@]} == 0)); then
    echo "setup: all ${#wanted[@]} Debian packages present"
    return 0
  fi
  echo "setup: installing ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
}

omnidp_build() {
  local preset="$1"
  shift
  cmake --preset "$preset"
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build --preset "$preset" --parallel "$(omnidp_cores)" "${targets[@]}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  preset="${1:-release}"
  shift || true
  omnidp_install_packages
  omnidp_build "$preset" "$@"
fi

#!/usr/bin/env bash
# The test command (also CI's, through .ci/run): installs the Debian packages if missing,
# configures and builds the release preset, runs the whole GoogleTest/ctest suite.
#   scripts/test.sh [PRESET] [ctest arguments...]   e.g. scripts/test.sh asan -L config
# Exit code: ctest's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh

preset="${1:-release}"
shift || true

if ((EUID == 0)); then  # mpirun refuses root unless told otherwise (CI runs as root)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=1  # one torch thread per rank/test: the cores are shared

omnidp_install_packages
omnidp_build "$preset"

# ctest's own summary ("N% tests passed, M tests failed out of K") closes the output.
exec ctest --preset "$preset" --output-on-failure --parallel "$(omnidp_cores)" "$@"

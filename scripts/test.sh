#!/usr/bin/env bash
# The test command (also CI's, through .ci/run): installs the Debian packages if missing,
# configures and builds the release preset, runs the whole GoogleTest/ctest suite, then (CI)
# the torch-free tests again under ASan + UBSan.
#   scripts/test.sh [PRESET] [ctest arguments...]   e.g. scripts/test.sh asan -L config
# Exit code: 0 when every ctest run passed.
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

# 1. The whole suite. ctest's own summary ("N% tests passed, M tests failed out of K") ends it.
rc=0
ctest --preset "$preset" --output-on-failure --parallel "$(omnidp_cores)" "$@" || rc=$?

# 2. With the release preset and no ctest arguments (CI): the torch-free tests again under
#    ASan + UBSan (preset asan, label sanitize; tests/CMakeLists.txt lists them).
if [[ $preset == release && $# -eq 0 && -z ${OMNIDP_SKIP_SANITIZE:-} ]]; then
  echo "test: sanitizer stage (ASan + UBSan): the torch-free tests, preset asan, label sanitize"
  omnidp_build asan omnidp_sanitize_tests
  ctest --preset asan -L sanitize --output-on-failure --parallel "$(omnidp_cores)" || rc=$?
fi
exit "$rc"

#!/usr/bin/env bash
# The demo: installs the Debian packages if missing, builds omni-dp-batch (release preset) and
# generates the 18 videos of configs/prompts/demo.jsonl with the tiny-wan model on 2 MPI ranks.
#   scripts/demo.sh [extra omni-dp-batch arguments...]   e.g. scripts/demo.sh --no-resume
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh

if ((EUID == 0)); then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=1

omnidp_install_packages
omnidp_build release omni-dp-batch

set +e
mpirun -np 2 --oversubscribe build/release/bin/omni-dp-batch --config configs/tiny.yaml "$@"
rc=$?
set -e
echo
echo "demo: exit code $rc (0 all done, 1 some failed, 2 usage/config error, 75 interrupted)"
echo "demo: results in $PWD/results/tiny/  (results.h5, rank-NNNNN.h5, summary.json)"
echo "demo: inspect with  h5dump -d /requests results/tiny/results.h5"
exit "$rc"

#!/usr/bin/env bash
# The demo: installs the Debian packages omni-dp-batch needs if missing, builds it alone (demo
# preset: -O3 as release, without the test suite, in build/demo) and generates the 18 videos of
# configs/prompts/demo.jsonl with the tiny-wan model on 2 MPI ranks. Each phase's seconds are
# printed at the end (docs/architecture.md, "Build time").
#   scripts/demo.sh [extra omni-dp-batch arguments...]   e.g. scripts/demo.sh --no-resume
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh

if ((EUID == 0)); then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=1

t0=$SECONDS
omnidp_install_packages build
t1=$SECONDS
omnidp_build demo omni-dp-batch
t2=$SECONDS

set +e
mpirun -np 2 --oversubscribe build/demo/bin/omni-dp-batch --config configs/tiny.yaml "$@"
rc=$?
set -e
t3=$SECONDS
echo
echo "demo: exit code $rc (0 all done, 1 some failed, 2 usage/config error, 75 interrupted)"
echo "demo: results in $PWD/results/tiny/  (results.h5, rank-NNNNN.h5, summary.json)"
echo "demo: inspect with  h5dump -d /requests results/tiny/results.h5"
echo "demo: seconds: packages $((t1 - t0)), configure + build $((t2 - t1)), run $((t3 - t2)), total $((t3 - t0))"
exit "$rc"

#!/usr/bin/env bash
# The CPU proof that a change keeps every video (docs/architecture.md, "How a model is built"):
# the sequence- and CFG-parallel end-to-end suites store their runs (Wan and HunyuanVideo-1.5,
# fp32: single-rank runs, SP 2/4, SP 2 x CFG 2, TP 2, TP 2 x SP 2, TP 2 x CFG 2, CFG 2, two
# replicas) under <build>/tests/cli; this keeps them from the tree before and compares the tree
# after against them, hash by hash (omni-dp-compare, every request of every run folder).
#   scripts/same_videos_cpu.sh save  [build-dir]   run the suites, keep their runs (tree before)
#   scripts/same_videos_cpu.sh check [build-dir]   run the suites, compare with the kept runs
# build-dir: default build/release. SAME_CPU_DIR: where the runs are kept (/tmp/omnidp-same-cpu).
# Needs the fixtures (../shared or OMNIDP_SHARED_DIR at configure time). Exit 1 when any differ.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:?save or check}
build=$(realpath "${2:-$root/build/release}")
kept=${SAME_CPU_DIR:-/tmp/omnidp-same-cpu}
export OMP_NUM_THREADS=1
if ((EUID == 0)); then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
ctest --test-dir "$build" -R 'SequenceParallel|CfgParallel|TensorParallel' --output-on-failure | tail -3
cd "$build/tests/cli" || exit 2
case $mode in
  save)
    rm -rf "$kept" && mkdir -p "$kept" && cp -r sequence_parallel cfg_parallel "$kept/"
    echo "kept $(ls -d "$kept"/*/*/{single,parallel} 2>/dev/null | wc -l) run folders in $kept" ;;
  check)
    n=0; bad=0
    for d in $(cd "$kept" && ls -d */*/{single,parallel} 2>/dev/null); do
      r=$("$build/bin/omni-dp-compare" "$kept/$d" "$d" 2>&1 | tail -1)
      n=$((n + 1))
      case $r in PASS*) ;; *) bad=$((bad + 1)); echo "$d: $r" ;; esac
    done
    echo "$n run folders compared, $bad differ"
    ((n > 0 && bad == 0)) ;;
  *) echo "usage: $0 save|check [build-dir]" >&2; exit 2 ;;
esac

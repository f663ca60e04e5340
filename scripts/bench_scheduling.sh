#!/usr/bin/env bash
# Scheduling benchmark (docs/scheduling.md): the synthetic model on a heterogeneous mix (33, 65
# and 121 frames at 480p and 720p, 50 steps, CFG), at N = 1, 2, 4, 8 ranks, both policies;
# prints makespan, videos/min, scaling vs N=1, efficiency and the gap to the lower bound.
#
#   scripts/bench_scheduling.sh [BUILD_DIR]        (default build/release)
# Environment: COUNT (requests, 48), SEED (mix, 7), SPG (synthetic.seconds_per_gcost, 0.002),
#   RANKS ("1 2 4 8"), POLICIES ("dynamic round_robin"), WAIT (sleep|busy, sleep),
#   PREFETCH (1), SCALE (1: full 480p/720p videos; S > 1 divides height and width by S, for
#   machines without ~5 GB free for 8 ranks of full-size synthetic videos), WORK (a folder to
#   keep the runs in; default a temporary one), REPORTS (1: write each run's HTML report,
#   WORK/<policy>-n<N>.html, with omni-dp-inspect --html; the runs then write their rank files
#   and results.h5, without videos; scripts/report_screenshot.sh puts
#   them side by side in one PNG).
# Oversubscribed sleep mode works on any machine (8 ranks on 2 cores is fine).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
bench=$build/bin/omni-dp-bench-scheduling
[[ -x $bench ]] || { echo "no $bench: build the target omni-dp-bench-scheduling first" >&2; exit 2; }

COUNT=${COUNT:-48}
SEED=${SEED:-7}
SPG=${SPG:-0.002}
RANKS=${RANKS:-"1 2 4 8"}
POLICIES=${POLICIES:-"dynamic round_robin"}
WAIT=${WAIT:-sleep}
PREFETCH=${PREFETCH:-1}
REPORTS=${REPORTS:-0}
if [[ $REPORTS == 1 ]]; then export OMNIDP_BENCH_RESULTS=1; fi  # real results files, no videos
SCALE=${SCALE:-1}
work=${WORK:-$(mktemp -d /tmp/omnidp-bench-XXXXXX)}
mkdir -p "$work"

if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=1

cores=$(grep -c ^processor /proc/cpuinfo)
"$bench" manifest "$work/mix.jsonl" "$COUNT" "$SEED" "$SCALE"
cat > "$work/bench.yaml" <<YAML
model:
  name: synthetic
  device: cpu
synthetic:
  seconds_per_gcost: $SPG
  wait: $WAIT
scheduler:
  prefetch: $PREFETCH
input:
  manifest: $work/mix.jsonl
output:
  store_video: false
YAML

echo "omni-dp scheduling benchmark: $COUNT requests (seed $SEED, spatial scale 1/$SCALE)," \
  "seconds_per_gcost $SPG ($WAIT), prefetch $PREFETCH"
echo "host: $(hostname), $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runs in $work"
for policy in $POLICIES; do
  for n in $RANKS; do
    out="$work/$policy-n$n"
    rm -rf "$out"
    start=$SECONDS
    if ! mpirun --oversubscribe --bind-to none -np "$n" "$bench" run "$work/bench.yaml" \
        "output.dir=$out" "scheduler.policy=$policy" > "$work/$policy-n$n.log" 2>&1; then
      echo "run $policy N=$n failed: see $work/$policy-n$n.log" >&2
      exit 1
    fi
    printf '  %-12s N=%d done in %d s\n' "$policy" "$n" "$((SECONDS - start))"
    if [[ $REPORTS == 1 ]]; then
      "$build/bin/omni-dp-inspect" --html "$work/$policy-n$n.html" "$out" | sed 's/^/    /'
    fi
  done
done
echo
"$bench" table "$work" "$work/mix.jsonl" "$SPG"

#!/usr/bin/env bash
# Restart benchmark (docs/results.md "Restarts at scale"): the synthetic model (no wait,
# output.store_video false) on N tiny requests, one rank. For each N it
#   1. runs the job fresh (fsync turned into a no-op by an LD_PRELOAD shim, to fill the output
#      folder in minutes rather than hours; this run gives "first request" only),
#   2. runs it again with everything done (resume): scan of the rank files, manifest scan, merge,
#   3. runs the merge alone (omni-dp-bench-restart merge),
# and prints one table row: start -> first request handed out (fresh run), resume with
# everything done (start -> end of the scans; then the total with the merge), merge alone,
# rank 0's peak resident memory in the resume run.
#
#   scripts/bench_restart.sh [BUILD_DIR]          (default build/release)
# Environment: COUNTS ("100000"; e.g. "100000 1000000"), IMAGES (a count N: one more row, N
#   i2v requests with their own small 32x32 PNG each; 0 = none, default), WORK (a folder to keep
#   the runs in; default a temporary one), KEEP (1: keep WORK), BENCH (the omni-dp-bench-restart
#   binary; default BUILD_DIR/bin's), REUSE (1: keep an output folder an earlier run left in WORK
#   and skip its fresh run; "first_s" is then "-").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
bench=${BENCH:-$build/bin/omni-dp-bench-restart}
[[ -x $bench ]] || { echo "no $bench: build the target omni-dp-bench-restart first" >&2; exit 2; }

COUNTS=${COUNTS:-100000}
IMAGES=${IMAGES:-0}
work=${WORK:-$(mktemp -d /tmp/omnidp-restart-XXXXXX)}
mkdir -p "$work"
if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=1

# fsync/fdatasync as no-ops, for the fill run only.
cat > "$work/nofsync.c" <<'C'
int fsync(int fd) { (void)fd; return 0; }
int fdatasync(int fd) { (void)fd; return 0; }
C
cc -shared -fPIC -O2 -o "$work/nofsync.so" "$work/nofsync.c"

cat > "$work/bench.yaml" <<YAML
model:
  name: synthetic
  device: cpu
parallel:
  coordinator_runs_work: true
scheduler:
  policy: dynamic
  order: manifest
synthetic:
  seconds_per_gcost: 0
output:
  store_video: false
YAML

fig() { sed -n "s/^bench: $1 //p" "$2" | tail -1; }

row() {  # label count [image_dir]
  local label=$1 n=$2 images=${3:-}
  local m="$work/$label.jsonl" out="$work/$label-out"
  if [[ ${REUSE:-0} == 1 && -f $m && -d $out ]]; then
    rm -f "$out/results.h5" "$out/summary.json" "$out/.omnidp-file-hashes"
    echo "bench: first_request_s -" > "$work/$label-fresh.log"
  else
    "$bench" manifest "$m" "$n" $images
    rm -rf "$out"
    mpirun --oversubscribe --bind-to none -np 1 -x LD_PRELOAD="$work/nofsync.so" \
      "$bench" run --no-resume "$work/bench.yaml" "input.manifest=$m" "output.dir=$out" \
      > "$work/$label-fresh.log" 2>&1 || { echo "fresh run failed: $work/$label-fresh.log" >&2; exit 1; }
  fi
  mpirun --oversubscribe --bind-to none -np 1 \
    "$bench" run "$work/bench.yaml" "input.manifest=$m" "output.dir=$out" \
    > "$work/$label-resume.log" 2>&1 || { echo "resume run failed: $work/$label-resume.log" >&2; exit 1; }
  "$bench" merge "$out" > "$work/$label-merge.log" 2>&1 ||
    { echo "merge failed: $work/$label-merge.log" >&2; exit 1; }
  printf '%-22s %9s  %11s  %10s  %10s  %10s  %9s  %10s\n' "$label" "$n" \
    "$(fig first_request_s "$work/$label-fresh.log")" "$(fig scan_done_s "$work/$label-resume.log")" \
    "$(fig merge_start_s "$work/$label-resume.log")" "$(fig total_s "$work/$label-resume.log")" \
    "$(fig merge_s "$work/$label-merge.log")" "$(fig peak_rss_mib "$work/$label-resume.log")"
}

echo "omni-dp restart benchmark: synthetic model, 1 rank, store_video false"
echo "host: $(hostname), $(grep -c ^processor /proc/cpuinfo) cores," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); runs in $work"
echo "columns: first = start -> first request (fresh run); done-scan = the rank files' resume" \
  "scan; resume = start -> end of the scans (everything done); resume+merge = that run's total;" \
  "merge = merge alone; rss = rank 0's peak resident memory in the resume run (MiB)"
printf '%-22s %9s  %11s  %10s  %10s  %10s  %9s  %10s\n' run requests first_s done_scan_s \
  resume_s resume+merge merge_s rss_mib
for n in $COUNTS; do row "t2v-$n" "$n"; done
if [[ $IMAGES -gt 0 ]]; then
  python3 - "$work/images" "$IMAGES" <<'PY'
import os, struct, sys, zlib
root, n = sys.argv[1], int(sys.argv[2])
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
for k in range(n):
    d = os.path.join(root, str(k % 1000)); os.makedirs(d, exist_ok=True)
    raw = b"".join(b"\0" + os.urandom(96) for _ in range(32))  # 32x32 RGB noise
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 32, 32, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    with open(os.path.join(d, "img-%d.png" % k), "wb") as f: f.write(png)
PY
  row "i2v-$IMAGES-images" "$IMAGES" "$work/images"
fi
[[ ${KEEP:-0} == 1 ]] || [[ -n ${WORK:-} ]] || rm -rf "$work"

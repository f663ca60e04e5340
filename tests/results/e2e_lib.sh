# Shared by the end-to-end scripts of tests/results (sourced, not run).
# Expects: BATCH COMPARE MPIEXEC CONFIG WORK set by the caller; SECONDS_PER_GCOST optional (the
# synthetic model's time per 1e9 cost units: 100 gives 0.01-0.3 s per request of demo.jsonl).
SECONDS_PER_GCOST=${SECONDS_PER_GCOST:-100}

# The scripts read row counts with h5dump (Debian's hdf5-tools): without it they skip (77).
if ! command -v h5dump >/dev/null 2>&1; then
  echo "SKIP: h5dump (hdf5-tools) is not installed"
  exit 77
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# batch N OUTPUT [--set ...]: runs omni-dp-batch on N ranks (synthetic model), appends its
# output to OUTPUT.log and prints its exit code.
batch() {
  local n=$1 out=$2
  shift 2
  local rc=0
  echo "=== mpirun -np $n omni-dp-batch --output $out $*" >>"$out.log"
  "$MPIEXEC" -np "$n" --oversubscribe "$BATCH" --config "$CONFIG" --output "$out" \
    --set synthetic.seconds_per_gcost=$SECONDS_PER_GCOST "$@" >>"$out.log" 2>&1 || rc=$?
  echo "=== exit $rc" >>"$out.log"
  echo "$rc"
}

# expect_rc WHAT EXPECTED ACTUAL [LOG]
expect_rc() {
  if [[ "$3" != "$2" ]]; then
    [[ -n "${4:-}" && -f "$4" ]] && tail -n 40 "$4" >&2
    fail "$1: exit $3, expected $2"
  fi
}

# rows FILE: number of rows of FILE's /requests table (read with h5dump).
rows() {
  h5dump -H -d /requests "$1" | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p'
}

# rank_rows DIR: rows over every rank file of DIR.
rank_rows() {
  local total=0 f
  for f in "$1"/rank-*.h5; do total=$((total + $(rows "$f"))); done
  echo "$total"
}

# compare_ok A B: omni-dp-compare must pass.
compare_ok() {
  local rc=0
  "$COMPARE" "$1" "$2" >"$WORK/compare.out" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]]; then
    cat "$WORK/compare.out" >&2
    fail "omni-dp-compare $1 $2: exit $rc, expected 0"
  fi
}

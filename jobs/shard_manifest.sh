#!/usr/bin/env bash
# Splits a JSONL manifest into N shards, request i (blank and '#' lines skipped) to shard i % N,
# written beside it as NAME.shard-NN-of-N.jsonl (same folder: relative image paths still resolve).
# Every shard gets its file, an empty one where there are fewer requests than shards, so that
# each task of the job array finds its manifest (and finishes at once with nothing to run).
#   jobs/shard_manifest.sh prompts.jsonl 16
set -euo pipefail
manifest=$1
n=$2
[[ -f $manifest && $n -ge 1 ]] || { echo "usage: $0 MANIFEST.jsonl N" >&2; exit 2; }
base=${manifest%.jsonl}
awk -v n="$n" -v base="$base" '
  BEGIN { for (k = 0; k < n; k++) printf "" > sprintf("%s.shard-%02d-of-%d.jsonl", base, k, n) }
  /^[[:space:]]*(#|$)/ { next }
  { f = sprintf("%s.shard-%02d-of-%d.jsonl", base, i % n, n); print > f; i++ }
  END { printf "%d requests in %d shards: %s.shard-NN-of-%d.jsonl\n", i, n, base, n }' "$manifest"

#!/usr/bin/env bash
# jobs/shard_manifest.sh: request i goes to shard i % N, comments and blank lines skipped, and
# every shard has its file, an empty one where there are fewer requests than shards (issue 39:
# the array tasks of the missing shards failed); jobs/omni-dp-array.sbatch ends the task of an
# empty shard with exit 0 (omni-dp-batch refuses a manifest without requests).
# Usage: shard_manifest_test.sh SOURCE_DIR BIN_DIR WORK_DIR
set -uo pipefail
src=$1 bin=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
printf '%s\n' '# three requests' '{"id": "a", "prompt": "one"}' '' '{"id": "b", "prompt": "two"}' \
  '{"id": "c", "prompt": "three"}' > "$work/p.jsonl"
out=$(bash "$src/jobs/shard_manifest.sh" "$work/p.jsonl" 5) || fail "shard_manifest.sh exited $?"
[[ $out == "3 requests in 5 shards: $work/p.shard-NN-of-5.jsonl" ]] || fail "printed: $out"
for k in 00 01 02 03 04; do [[ -f $work/p.shard-$k-of-5.jsonl ]] || fail "no file for shard $k"; done
[[ $(cat "$work/p.shard-00-of-5.jsonl") == '{"id": "a", "prompt": "one"}' ]] || fail "shard 00"
[[ $(cat "$work/p.shard-02-of-5.jsonl") == '{"id": "c", "prompt": "three"}' ]] || fail "shard 02"
[[ ! -s $work/p.shard-03-of-5.jsonl && ! -s $work/p.shard-04-of-5.jsonl ]] || fail "shards 03, 04 not empty"
# Sharding again (fewer shards than before) rewrites the files it names.
bash "$src/jobs/shard_manifest.sh" "$work/p.jsonl" 2 > /dev/null || fail "second split"
[[ $(wc -l < "$work/p.shard-00-of-2.jsonl") == 2 && $(wc -l < "$work/p.shard-01-of-2.jsonl") == 1 ]] ||
  fail "2 shards: $(wc -l "$work"/p.shard-0?-of-2.jsonl)"
# The array task of an empty shard has nothing to do: exit 0, no job started (there is no Slurm
# here: the task's environment is set by hand, and no mpirun exists on PATH for it).
run_task() {
  env -i PATH=/usr/bin:/bin HOME="$work" OMNIDP_JOBS="$src/jobs" SLURM_ARRAY_TASK_COUNT=5 \
    SLURM_ARRAY_TASK_ID="$1" SLURM_JOB_NAME=arr OMNIDP_MANIFEST="$work/p.jsonl" \
    OMNIDP_RESULTS="$work/results" bash "$src/jobs/omni-dp-array.sbatch"
}
bash "$src/jobs/shard_manifest.sh" "$work/p.jsonl" 5 > /dev/null || fail "third split"
out=$(run_task 4 2>&1) || fail "the task of empty shard 04 exited $?: $out"
[[ $out == "omnidp-array: shard 04 holds no request ($work/p.shard-04-of-5.jsonl): nothing to do" ]] ||
  fail "task 04 printed: $out"
[[ ! -e $work/results ]] || fail "the task of an empty shard started a job"
# omni-dp-batch itself still refuses a manifest without requests (exit 2).
"$bin/omni-dp-batch" --config "$src/configs/synthetic.yaml" --manifest "$work/p.shard-04-of-5.jsonl" \
  --output "$work/out" > "$work/batch.log" 2>&1
rc=$?
[[ $rc == 2 ]] || fail "omni-dp-batch on an empty shard exited $rc"
echo "shard_manifest: ok"

#!/usr/bin/env bash
# An out-of-tree model end to end (docs/models.md, "Out-of-tree models"): installs the project
# into a temporary prefix, builds examples/custom-model against it with find_package(omnidp),
# and runs a job of that model with the installed omni-dp-batch under mpirun (2 ranks), twice:
# both runs complete every request with the same hashes.
#   plugin_e2e.sh BUILD_DIR SOURCE_DIR MPIEXEC WORK_DIR
set -euo pipefail
build=$1 src=$2 mpiexec=$3 work=$4
rm -rf "$work"; mkdir -p "$work"
prefix=$work/prefix
# On failure, the step's log (the steps write their output to files).
step() {
  local log=$1
  shift
  "$@" > "$log" 2>&1 || { echo "plugin_e2e: failed: $*"; cat "$log"; exit 1; }
}
step "$work/install.log" cmake --install "$build" --prefix "$prefix"
test -f "$prefix/lib/cmake/omnidp/omnidpConfig.cmake"
test -f "$prefix/include/omnidp/models/plugin.hpp"
test -x "$prefix/bin/omni-dp-batch"
ls "$prefix/lib/"libomnidp_*.a > /dev/null

# The example finds omnidp in the prefix and its dependencies (Torch, ...) where this build found
# them: the build's own CMAKE_PREFIX_PATH (the GPU machine's libtorch comes from python3's torch).
deps=$(sed -n 's/^CMAKE_PREFIX_PATH:[A-Z]*=//p' "$build/CMakeCache.txt")
step "$work/example-configure.log" cmake -S "$src/examples/custom-model" -B "$work/example" \
  -DCMAKE_PREFIX_PATH="$prefix${deps:+;$deps}" -DCMAKE_BUILD_TYPE=Release
step "$work/example-build.log" cmake --build "$work/example"
plugin=$work/example/libcustom_model.so
test -f "$plugin"

for i in 1 2 3; do
  echo "{\"id\": \"g$i\", \"prompt\": \"gradient $i\", \"seed\": $((i * 1000003))}"
done > "$work/m.jsonl"
cat > "$work/custom.yaml" <<YAML
model:
  name: custom-gradient
  plugin: example/libcustom_model.so   # relative to this file's folder
  weights: random
generation: {num_frames: 5, height: 32, width: 48, num_inference_steps: 2}
input: {manifest: m.jsonl}
output: {dir: out}
YAML
for run in a b; do
  (cd "$work" && "$mpiexec" --oversubscribe -np 2 "$prefix/bin/omni-dp-batch" --config custom.yaml \
     --output "out-$run" > "run-$run.log" 2>&1) || { cat "$work/run-$run.log"; exit 1; }
  grep -q "summary: 3 completed, 0 failed" "$work/run-$run.log" || { cat "$work/run-$run.log"; exit 1; }
done
"$prefix/bin/omni-dp-inspect" "$work/out-a/results.h5" > "$work/inspect.txt"
grep -q "^model: *custom-gradient" "$work/inspect.txt" || { cat "$work/inspect.txt"; exit 1; }
"$prefix/bin/omni-dp-compare" "$work/out-a/results.h5" "$work/out-b/results.h5" > "$work/compare.txt" ||
  { cat "$work/compare.txt"; exit 1; }

# A name the plugin does not register is the usual error, naming the plugin that was loaded.
if (cd "$work" && "$prefix/bin/omni-dp-batch" --config custom.yaml --set model.name=custom-gradiant \
      --validate-only > bad.log 2>&1); then
  echo "an unknown model name was accepted"; exit 1
fi
grep -q "did you mean 'custom-gradient'?; model.plugin $work/example/libcustom_model.so is loaded" "$work/bad.log" ||
  { cat "$work/bad.log"; exit 1; }
echo "plugin_e2e: OK"

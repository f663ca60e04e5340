#!/usr/bin/env bash
# Runs clang-tidy (the checks of .clang-tidy, warnings are errors) on the translation units that
# keep them clean: the torch-free model API and the safetensors header parser. Not a ctest: on
# the 2-core CI machine it costs about 10 s of CPU per file.
# Usage: scripts/clang_tidy.sh [build-dir]   (default build/release, configured: it reads
# compile_commands.json) [-- more files]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/release}
shift || true
[ "${1:-}" = "--" ] && shift
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$tidy" ]; then
  echo "clang-tidy not found (Debian: clang-tidy-14)" >&2
  exit 77
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "$build/compile_commands.json missing: configure first (cmake --preset release)" >&2
  exit 2
fi
files=(
  src/models/config_json.cpp
  src/models/cost.cpp
  src/models/model_table.cpp
  src/models/pipeline.cpp
  src/models/plugin.cpp
  src/models/size_buckets.cpp
  src/models/snapshot_config.cpp
  src/models/snapshot_digest.cpp
  src/models/synthetic.cpp
  src/models/weights/safetensors_header.cpp
)
cd "$root"
"$tidy" -p "$build" --quiet "${files[@]}" "$@"
echo "clang-tidy: ${#files[@]} files clean (.clang-tidy)"

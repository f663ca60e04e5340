#!/usr/bin/env bash
# Bounded libFuzzer runs (clang, -fsanitize=fuzzer,address,undefined).
#   scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET...]     targets: safetensors_header
# Builds into build-fuzz/, seeds each corpus (safetensors_header: the headers of every
# fixture file under ../shared/fixtures), runs each target for the given time on one core and
# prints its executions and findings. Exit code: non-zero when a target found a crash
# (the reproducer is left in build-fuzz/<target>/crash-*).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(safetensors_header)

if ! command -v clang++-14 >/dev/null && ! command -v clang++ >/dev/null ||
   ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: installing clang-14 and libclang-rt-14-dev"
  sudo=()
  if ((EUID != 0)); then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
    clang-14 libclang-rt-14-dev
fi
cxx="$(command -v clang++-14 || command -v clang++)"
shared="${OMNIDP_SHARED_DIR:-$PWD/../shared}"
out="build-fuzz"
mkdir -p "$out"

flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Iinclude)

sources_of() {
  case "$1" in
    safetensors_header)
      echo tests/fuzz/safetensors_header_fuzz.cpp src/models/weights/safetensors_header.cpp \
        src/common/error.cpp ;;
    *) echo "fuzz: unknown target $1" >&2; return 2 ;;
  esac
}

build_target() {  # rebuilt only when a source or header is newer than the binary
  local t="$1" bin="$out/$1/fuzz" srcs
  srcs="$(sources_of "$t")"
  if [[ -x "$bin" ]] && [[ -z "$(find $srcs include/omnidp/common include/omnidp/models/weights -newer "$bin" -print -quit)" ]]; then
    return 0
  fi
  # shellcheck disable=SC2086
  "$cxx" "${flags[@]}" $srcs -o "$bin"
}

seed_target() {
  local t="$1" corpus="$out/$t/corpus"
  mkdir -p "$corpus"
  case "$t" in
    safetensors_header)
      # 8 bytes of "extra data size" + the file's first 8 + header bytes.
      python3 - "$shared/fixtures" "$corpus" <<'PY'
import os, struct, sys, hashlib
root, corpus = sys.argv[1], sys.argv[2]
for d, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".safetensors"):
            continue
        with open(os.path.join(d, f), "rb") as fh:
            head = fh.read(8)
            n = struct.unpack("<Q", head)[0]
            header = fh.read(n)
        size = os.path.getsize(os.path.join(d, f))
        blob = struct.pack("<Q", size - 8 - n) + head + header
        name = hashlib.sha1(blob).hexdigest()
        with open(os.path.join(corpus, name), "wb") as out:
            out.write(blob)
PY
      ;;
  esac
}

status=0
for t in "${targets[@]}"; do
  mkdir -p "$out/$t"
  echo "fuzz: building $t"
  build_target "$t"
  seed_target "$t"
  echo "fuzz: running $t for ${seconds}s ($(ls "$out/$t/corpus" | wc -l) seed inputs)"
  log="$out/$t/fuzz.log"
  set +e
  (cd "$out/$t" && ./fuzz -max_total_time="$seconds" -max_len=65536 -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 corpus) >"$log" 2>&1
  rc=$?
  set -e
  execs="$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')"
  cov="$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)"
  crashes="$(ls "$out/$t" | grep -c '^crash-\|^leak-\|^timeout-\|^oom-' || true)"
  echo "fuzz: $t: rc=$rc executions=$execs ${cov} corpus=$(ls "$out/$t/corpus" | wc -l) findings=$crashes (log: $log)"
  if ((rc != 0 || crashes > 0)); then
    status=1
    grep -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | head -20 || true
  fi
done
exit "$status"

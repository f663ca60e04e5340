// libFuzzer target for the manifest line parser (built by scripts/fuzz.sh with clang,
// -fsanitize=fuzzer,address,undefined; not part of the CMake build).
//
// Input: one manifest line (any bytes; the reader hands the parser a line without its end).
// Anything may be rejected with a ManifestError naming the file and line; any other
// exception, a crash, a sanitizer report or a broken invariant on an accepted line is a finding.
// Invariants of an accepted request: a non-empty id, a seed in 0..2^63-1, 4k+1 frames, sizes
// that are multiples of 16, and an input key that is stable (same request, same key) and
// changes with the seed, and a line holding a NUL byte is never accepted (nlohmann stops at it).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "omnidp/common/error.hpp"
#include "omnidp/manifest/input_key.hpp"
#include "omnidp/manifest/manifest.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const omnidp::GenerationConfig defaults;
  try {
    const omnidp::Request request = omnidp::parse_manifest_line(text, defaults, "fuzz.jsonl", 7);
    check(!request.id.empty());
    check(text.find('\0') == std::string_view::npos);  // a NUL byte is refused, never cut off
    check(request.seed <= static_cast<std::uint64_t>(INT64_MAX));
    check(request.num_frames > 0 && request.num_frames % 4 == 1);
    check(request.height > 0 && request.height % 16 == 0 && request.width > 0 &&
          request.width % 16 == 0);
    const std::string key = omnidp::compute_input_key(request, "fuzz-model", "weights");
    check(key.size() == 64);
    check(key == omnidp::compute_input_key(request, "fuzz-model", "weights"));
    omnidp::Request other = request;
    other.seed = request.seed ^ 1U;
    check(key != omnidp::compute_input_key(other, "fuzz-model", "weights"));
  } catch (const omnidp::ManifestError& e) {
    check(e.line() == 7 && e.file() == "fuzz.jsonl");
  }
  return 0;
}

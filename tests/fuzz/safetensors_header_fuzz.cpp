// libFuzzer target for the safetensors header parser (built by scripts/fuzz.sh with clang,
// -fsanitize=fuzzer,address,undefined; not part of the CMake build).
//
// Input: 8 bytes little-endian "extra data bytes" (mod 2^40), then the start of a safetensors
// file. The parser sees file_size = (input size - 8) + extra, so big tensors are reachable with
// small inputs. Anything may be rejected with a WeightsError; any other exception, a crash, a
// sanitizer report or a broken invariant on an accepted header is a finding.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "omnidp/common/error.hpp"
#include "omnidp/models/weights/safetensors_header.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::uint64_t extra = 0;
  for (int i = 7; i >= 0; --i) extra = (extra << 8U) | data[i];
  extra &= (1ULL << 40U) - 1;
  const std::span<const std::uint8_t> file(data + 8, size - 8);
  const std::uint64_t file_size = file.size() + extra;
  try {
    const auto header = omnidp::models::parse_safetensors_header(file, file_size, "fuzz");
    // Invariants of an accepted header.
    check(header.data_offset == 8 + header.header_size);
    check(header.data_offset <= file_size);
    const std::uint64_t data_size = file_size - header.data_offset;
    const omnidp::models::TensorMeta* prev = nullptr;
    for (const auto& t : header.tensors) {
      check(t.begin <= t.end && t.end <= data_size);
      std::uint64_t bytes = omnidp::models::itemsize(t.dtype);
      for (const auto d : t.shape) {
        check(d >= 0);
        bytes *= static_cast<std::uint64_t>(d);
      }
      check(bytes == t.end - t.begin);
      if (prev != nullptr) check(prev->name < t.name);
      check(header.find(t.name) == &t);
      prev = &t;
    }
    for (const auto& a : header.tensors) {
      for (const auto& b : header.tensors) {
        if (&a == &b || a.begin == a.end || b.begin == b.end) continue;
        check(a.end <= b.begin || b.end <= a.begin);
      }
      if (header.tensors.size() > 64) break;  // keep executions fast
    }
  } catch (const omnidp::WeightsError&) {
    // The expected way to reject an input.
  }
  return 0;
}

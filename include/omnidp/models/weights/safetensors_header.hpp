#pragma once
// Torch-free parsing and validation of a safetensors header (the 8-byte little-endian header
// length, then a JSON object of tensor entries). Used by SafetensorsFile and by the libFuzzer
// target tests/fuzz/safetensors_header_fuzz.cpp. Thread-safe (pure functions).
//
// Validation (every failure is a WeightsError naming the file and, where one is involved, the
// tensor): header length >= 2, <= 100 MiB and within the file; a JSON object; `__metadata__`
// (optional) an object of strings; every other entry an object with exactly `dtype` (one of
// F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL), `shape` (non-negative integers) and `data_offsets`
// [begin, end] with end - begin == numel * itemsize, end within the data section (a file
// shorter than that is reported as truncated) and no two tensors overlapping.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace omnidp::models {

enum class SafetensorsDtype { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };

// "F32", "BF16", ... as written in the file.
[[nodiscard]] std::string_view to_string(SafetensorsDtype dtype) noexcept;
[[nodiscard]] std::size_t itemsize(SafetensorsDtype dtype) noexcept;

struct TensorMeta {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets relative to the start of the data section
  std::uint64_t end = 0;
  [[nodiscard]] std::int64_t numel() const noexcept;
  [[nodiscard]] std::uint64_t nbytes() const noexcept { return end - begin; }
};

struct SafetensorsHeader {
  std::uint64_t header_size = 0;                // the JSON length (the 8-byte prefix's value)
  std::uint64_t data_offset = 0;                // file offset of the data section: 8 + header_size
  std::vector<TensorMeta> tensors;              // sorted by name
  std::map<std::string, std::string> metadata;  // `__metadata__`
  // nullptr when absent.
  [[nodiscard]] const TensorMeta* find(std::string_view name) const noexcept;
};

// Largest header accepted (the reference implementation's limit).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100ULL * 1024 * 1024;

// `bytes` is the beginning of the file (at least 8 + header length bytes, may be the whole
// file); `file_size` the total file size. `file` names the file in errors.
[[nodiscard]] SafetensorsHeader parse_safetensors_header(std::span<const std::uint8_t> bytes,
                                                         std::uint64_t file_size,
                                                         const std::string& file = "<memory>");

}  // namespace omnidp::models

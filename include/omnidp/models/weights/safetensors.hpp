#pragma once
// A safetensors file opened with mmap: the header is validated on open (see
// safetensors_header.hpp), tensors are copied out on request and converted to a target dtype.
// Ownership: SafetensorsFile owns its mapping (move-only). Thread-safety: const member
// functions may be called concurrently.

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/models/weights/safetensors_header.hpp"

namespace omnidp::models {

// A read-only private mapping of a whole file (RAII over mmap/munmap). An empty file maps to
// an empty span. Throws WeightsError when the file cannot be opened or mapped.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  [[nodiscard]] std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // Drops the whole pages inside bytes (a sub-span of this mapping) from this process's
  // resident set (madvise MADV_DONTNEED): a later read maps them again from the page cache.
  // Keeps a loader's peak host memory at the tensors in flight, not the whole file.
  void release(std::span<const std::uint8_t> bytes) const noexcept;

 private:
  void release() noexcept;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// The torch dtype of a safetensors dtype.
[[nodiscard]] torch::ScalarType to_scalar_type(SafetensorsDtype dtype) noexcept;

class SafetensorsFile {
 public:
  // Maps and validates the file. Throws WeightsError naming the file (and the tensor).
  explicit SafetensorsFile(const std::filesystem::path& path);

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] const SafetensorsHeader& header() const noexcept { return header_; }
  // Tensor names, sorted.
  [[nodiscard]] std::vector<std::string> names() const;
  [[nodiscard]] bool contains(std::string_view name) const noexcept;
  // Throws WeightsError for an unknown name.
  [[nodiscard]] const TensorMeta& meta(std::string_view name) const;
  // The tensor's raw little-endian bytes inside the mapping (valid while *this lives).
  [[nodiscard]] std::span<const std::uint8_t> raw(std::string_view name) const;
  // MappedFile::release of the tensor's bytes (after it has been copied out).
  void release(std::string_view name) const;
  // An owned CPU tensor (a copy of the bytes) converted to `target`: floats convert with
  // round-to-nearest-even (bf16/fp16 -> fp32 is exact); integers and bools convert by value.
  [[nodiscard]] torch::Tensor tensor(std::string_view name,
                                     torch::ScalarType target = torch::kFloat32) const;
  // tensor(name, target).narrow(dim, start, length) as an owned contiguous tensor, copying only
  // the slice's bytes out of the mapping (a tensor-parallel shard, docs/models.md). Throws
  // WeightsError naming the file and tensor for a dim or range outside the tensor's shape.
  [[nodiscard]] torch::Tensor tensor_slice(std::string_view name, std::int64_t dim,
                                           std::int64_t start, std::int64_t length,
                                           torch::ScalarType target = torch::kFloat32) const;

 private:
  std::filesystem::path path_;
  MappedFile map_;
  SafetensorsHeader header_;
};

// Writes `tensors` (name, tensor; any device, contiguous or not) as a safetensors file in
// their own dtypes (F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL), names sorted, data in name
// order, the header padded with spaces to a multiple of 8. Throws WeightsError on an
// unsupported dtype, a duplicate name or an I/O failure.
void save_safetensors(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace omnidp::models

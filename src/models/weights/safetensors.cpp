#include "omnidp/models/weights/safetensors.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

// Closes a file descriptor on scope exit (only used while mapping).
class FdGuard {
 public:
  explicit FdGuard(int fd) noexcept : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }

 private:
  int fd_;
};

std::string errno_text() { return std::strerror(errno); }

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  const FdGuard fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw WeightsError(path.string(), "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw WeightsError(path.string(), "cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) throw WeightsError(path.string(), "not a regular file");
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p == MAP_FAILED) {
    size_ = 0;
    throw WeightsError(path.string(), "cannot mmap: " + errno_text());
  }
  data_ = static_cast<const std::uint8_t*>(p);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): munmap takes void*.
    ::munmap(const_cast<std::uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
  }
}

torch::ScalarType to_scalar_type(SafetensorsDtype dtype) noexcept {
  switch (dtype) {
    case SafetensorsDtype::f64: return torch::kFloat64;
    case SafetensorsDtype::f32: return torch::kFloat32;
    case SafetensorsDtype::f16: return torch::kFloat16;
    case SafetensorsDtype::bf16: return torch::kBFloat16;
    case SafetensorsDtype::i64: return torch::kInt64;
    case SafetensorsDtype::i32: return torch::kInt32;
    case SafetensorsDtype::i16: return torch::kInt16;
    case SafetensorsDtype::i8: return torch::kInt8;
    case SafetensorsDtype::u8: return torch::kUInt8;
    case SafetensorsDtype::boolean: return torch::kBool;
  }
  return torch::kFloat32;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : path_(path),
      map_(path),
      header_(parse_safetensors_header(map_.bytes(), map_.size(), path.string())) {}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(header_.tensors.size());
  for (const auto& t : header_.tensors) out.push_back(t.name);
  return out;
}

bool SafetensorsFile::contains(std::string_view name) const noexcept {
  return header_.find(name) != nullptr;
}

const TensorMeta& SafetensorsFile::meta(std::string_view name) const {
  const auto* m = header_.find(name);
  if (m == nullptr)
    throw WeightsError(path_.string(), "no tensor named '" + std::string(name) + "'");
  return *m;
}

void MappedFile::release(std::span<const std::uint8_t> bytes) const noexcept {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(bytes.data()) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(bytes.data()) + bytes.size()) / page * page;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): madvise takes the page address as a pointer.
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void SafetensorsFile::release(std::string_view name) const { map_.release(raw(name)); }

std::span<const std::uint8_t> SafetensorsFile::raw(std::string_view name) const {
  const auto& m = meta(name);
  return map_.bytes().subspan(header_.data_offset + m.begin, m.nbytes());
}

torch::Tensor SafetensorsFile::tensor(std::string_view name, torch::ScalarType target) const {
  const auto& m = meta(name);
  const auto bytes = raw(name);
  // BOOL is read as bytes and normalised (any non-zero byte is true).
  const bool is_bool = m.dtype == SafetensorsDtype::boolean;
  const auto stored = is_bool ? torch::kUInt8 : to_scalar_type(m.dtype);
  auto t = torch::empty(m.shape, torch::TensorOptions().dtype(stored));
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  if (is_bool) t = t.ne(0);
  return t.scalar_type() == target ? t : t.to(target);
}

torch::Tensor SafetensorsFile::tensor_slice(std::string_view name, std::int64_t dim,
                                            std::int64_t start, std::int64_t length,
                                            torch::ScalarType target) const {
  const auto& m = meta(name);
  const auto rank = static_cast<std::int64_t>(m.shape.size());
  if (dim < 0 || dim >= rank || start < 0 || length < 0 ||
      start + length > m.shape[static_cast<std::size_t>(dim)]) {
    throw WeightsError(
        path_.string(),
        fmt::format("tensor '{}': slice [{}, {}) of dim {} is outside its shape of {} dims", name,
                    start, start + length, dim, rank));
  }
  const bool is_bool = m.dtype == SafetensorsDtype::boolean;
  const auto stored = is_bool ? torch::kUInt8 : to_scalar_type(m.dtype);
  auto shape = m.shape;
  shape[static_cast<std::size_t>(dim)] = length;
  auto t = torch::empty(shape, torch::TensorOptions().dtype(stored));
  if (t.numel() > 0) {
    // The slice is `outer` runs of `inner` contiguous bytes, one per index of the dims before dim.
    std::int64_t outer = 1;
    for (std::int64_t d = 0; d < dim; ++d) outer *= m.shape[static_cast<std::size_t>(d)];
    std::int64_t after = 1;
    for (std::int64_t d = dim + 1; d < rank; ++d) after *= m.shape[static_cast<std::size_t>(d)];
    const auto element = static_cast<std::size_t>(t.element_size());
    const auto row =
        static_cast<std::size_t>(m.shape[static_cast<std::size_t>(dim)] * after) * element;
    const auto inner = static_cast<std::size_t>(length * after) * element;
    const auto offset = static_cast<std::size_t>(start * after) * element;
    const auto bytes = raw(name);
    auto* out = static_cast<std::uint8_t*>(t.data_ptr());
    for (std::int64_t o = 0; o < outer; ++o) {
      std::memcpy(out + static_cast<std::size_t>(o) * inner,
                  bytes.data() + static_cast<std::size_t>(o) * row + offset, inner);
    }
  }
  if (is_bool) t = t.ne(0);
  return t.scalar_type() == target ? t : t.to(target);
}

void save_safetensors(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, torch::Tensor>> sorted;
  sorted.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      throw WeightsError(path.string(), "'__metadata__' is not a tensor name");
    sorted.emplace_back(name, t.detach().to(torch::kCPU).contiguous());
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const auto& [name, t] = sorted[i];
    if (i > 0 && sorted[i - 1].first == name) {
      throw WeightsError(path.string(), "duplicate tensor name '" + name + "'");
    }
    std::string dtype;
    for (const auto d : {SafetensorsDtype::f64, SafetensorsDtype::f32, SafetensorsDtype::f16,
                         SafetensorsDtype::bf16, SafetensorsDtype::i64, SafetensorsDtype::i32,
                         SafetensorsDtype::i16, SafetensorsDtype::i8, SafetensorsDtype::u8,
                         SafetensorsDtype::boolean}) {
      if (to_scalar_type(d) == t.scalar_type()) dtype = std::string(to_string(d));
    }
    if (dtype.empty()) {
      throw WeightsError(path.string(), "tensor '" + name + "': dtype " +
                                            std::string(c10::toString(t.scalar_type())) +
                                            " cannot be stored in safetensors");
    }
    const auto bytes = static_cast<std::uint64_t>(t.numel()) * t.element_size();
    header[name] = {
        {"dtype", dtype}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw WeightsError(path.string(), "cannot create file");
  std::uint64_t n = text.size();
  char prefix[8];
  for (char& c : prefix) {
    c = static_cast<char>(n & 0xFFU);
    n >>= 8U;
  }
  out.write(prefix, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, t] : sorted) {
    out.write(static_cast<const char*>(t.data_ptr()),
              static_cast<std::streamsize>(static_cast<std::uint64_t>(t.numel()) * t.element_size()));
  }
  out.flush();
  if (!out) throw WeightsError(path.string(), "write failed");
}

}  // namespace omnidp::models

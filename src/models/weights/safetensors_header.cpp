#include "omnidp/models/weights/safetensors_header.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <limits>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

struct DtypeName {
  std::string_view name;
  SafetensorsDtype dtype;
  std::size_t size;
};

constexpr std::array<DtypeName, 10> kDtypes{{
    {"F64", SafetensorsDtype::f64, 8},
    {"F32", SafetensorsDtype::f32, 4},
    {"F16", SafetensorsDtype::f16, 2},
    {"BF16", SafetensorsDtype::bf16, 2},
    {"I64", SafetensorsDtype::i64, 8},
    {"I32", SafetensorsDtype::i32, 4},
    {"I16", SafetensorsDtype::i16, 2},
    {"I8", SafetensorsDtype::i8, 1},
    {"U8", SafetensorsDtype::u8, 1},
    {"BOOL", SafetensorsDtype::boolean, 1},
}};

[[noreturn]] void fail(const std::string& file, const std::string& message) {
  throw WeightsError(file, "invalid safetensors header: " + message);
}

std::string tensor_context(const std::string& name) { return "tensor '" + name + "': "; }

std::uint64_t as_u64(const nlohmann::json& v, const std::string& file, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  }
  fail(file, what + " must be a non-negative integer, got " + v.dump());
}

TensorMeta parse_entry(const std::string& name, const nlohmann::json& entry, const std::string& file) {
  const std::string ctx = tensor_context(name);
  if (!entry.is_object()) fail(file, ctx + "entry is not a JSON object");
  for (const auto& item : entry.items()) {
    if (item.key() != "dtype" && item.key() != "shape" && item.key() != "data_offsets") {
      fail(file, ctx + "unknown field '" + item.key() + "'");
    }
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(field)) fail(file, ctx + "missing field '" + field + "'");
  }
  TensorMeta meta;
  meta.name = name;

  const auto& dtype = entry["dtype"];
  if (!dtype.is_string()) fail(file, ctx + "dtype is not a string");
  const auto& dname = dtype.get_ref<const std::string&>();
  const auto it = std::find_if(kDtypes.begin(), kDtypes.end(),
                               [&](const DtypeName& d) { return d.name == dname; });
  if (it == kDtypes.end()) {
    fail(file, ctx + "unsupported dtype '" + dname +
                   "' (supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)");
  }
  meta.dtype = it->dtype;

  const auto& shape = entry["shape"];
  if (!shape.is_array()) fail(file, ctx + "shape is not an array");
  // numel * itemsize, refusing overflow past int64.
  constexpr auto kLimit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t bytes = it->size;
  for (const auto& dim : shape) {
    const std::uint64_t d = as_u64(dim, file, ctx + "shape entry");
    if (d > kLimit) fail(file, ctx + "shape entry too large");
    if (d != 0 && bytes > kLimit / d) fail(file, ctx + "shape " + shape.dump() + " is too large");
    bytes *= d;
    meta.shape.push_back(static_cast<std::int64_t>(d));
  }

  const auto& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    fail(file, ctx + "data_offsets must be [begin, end], got " + offsets.dump());
  }
  meta.begin = as_u64(offsets[0], file, ctx + "data_offsets begin");
  meta.end = as_u64(offsets[1], file, ctx + "data_offsets end");
  if (meta.end < meta.begin) {
    fail(file, fmt::format("{}data_offsets end {} < begin {}", ctx, meta.end, meta.begin));
  }
  if (meta.end - meta.begin != bytes) {
    fail(file,
         fmt::format("{}data_offsets [{}, {}] span {} bytes, but dtype {} and shape {} need {}",
                     ctx, meta.begin, meta.end, meta.end - meta.begin, dname, shape.dump(), bytes));
  }
  return meta;
}

}  // namespace

std::string_view to_string(SafetensorsDtype dtype) noexcept {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

std::size_t itemsize(SafetensorsDtype dtype) noexcept {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return d.size;
  }
  return 0;
}

std::int64_t TensorMeta::numel() const noexcept {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

const TensorMeta* SafetensorsHeader::find(std::string_view name) const noexcept {
  const auto it =
      std::lower_bound(tensors.begin(), tensors.end(), name,
                       [](const TensorMeta& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

SafetensorsHeader parse_safetensors_header(std::span<const std::uint8_t> bytes,
                                           std::uint64_t file_size, const std::string& file) {
  if (file_size < 8 || bytes.size() < 8) {
    fail(file, fmt::format("file is {} bytes, shorter than the 8-byte header length (truncated?)",
                           file_size));
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8U) | bytes[static_cast<std::size_t>(i)];
  if (n < 2 || n > kMaxSafetensorsHeader) {
    fail(file, fmt::format("header length {} is not in [2, {}]", n, kMaxSafetensorsHeader));
  }
  if (n > file_size - 8) {
    fail(file, fmt::format("header length {} exceeds the file size {} (truncated?)", n, file_size));
  }
  if (bytes.size() < 8 + n) {
    fail(file, fmt::format("only {} bytes given for a header of {}", bytes.size(), n));
  }
  SafetensorsHeader header;
  header.header_size = n;
  header.data_offset = 8 + n;
  const std::uint64_t data_size = file_size - header.data_offset;

  const auto* json_begin = bytes.data() + 8;
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json_begin, json_begin + n);
  } catch (const nlohmann::json::exception& e) {
    fail(file, std::string("header is not valid JSON: ") + e.what());
  }
  if (!root.is_object()) fail(file, "header is not a JSON object");

  for (const auto& item : root.items()) {
    if (item.key() == "__metadata__") {
      if (!item.value().is_object()) fail(file, "__metadata__ is not a JSON object");
      for (const auto& m : item.value().items()) {
        if (!m.value().is_string()) fail(file, "__metadata__ '" + m.key() + "' is not a string");
        header.metadata.emplace(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    header.tensors.push_back(parse_entry(item.key(), item.value(), file));
  }

  // Range: a tensor ending past the data section means a truncated file (or a lying header).
  for (const auto& t : header.tensors) {
    if (t.end > data_size) {
      fail(file, fmt::format("{}data_offsets [{}, {}] exceed the data section of {} bytes (file "
                             "truncated or offsets out of range)",
                             tensor_context(t.name), t.begin, t.end, data_size));
    }
  }
  // Overlap: sort by offset; zero-size tensors occupy no bytes.
  std::vector<const TensorMeta*> by_offset;
  by_offset.reserve(header.tensors.size());
  for (const auto& t : header.tensors) {
    if (t.end > t.begin) by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorMeta* a, const TensorMeta* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
  });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      fail(file, fmt::format("tensors '{}' [{}, {}] and '{}' [{}, {}] overlap",
                             by_offset[i - 1]->name, by_offset[i - 1]->begin, by_offset[i - 1]->end,
                             by_offset[i]->name, by_offset[i]->begin, by_offset[i]->end));
    }
  }
  std::sort(header.tensors.begin(), header.tensors.end(),
            [](const TensorMeta& a, const TensorMeta& b) { return a.name < b.name; });
  return header;
}

}  // namespace omnidp::models

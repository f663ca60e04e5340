#include "omnidp/models/text/protobuf_wire.hpp"

#include <fmt/format.h>
#include <bit>

#include "omnidp/common/error.hpp"

namespace omnidp::models::text::protobuf {

const char* to_string(WireType type) noexcept {
  switch (type) {
    case WireType::varint: return "varint";
    case WireType::fixed64: return "fixed64";
    case WireType::length_delimited: return "length-delimited";
    case WireType::fixed32: return "fixed32";
  }
  return "?";
}

Reader::Reader(std::string_view message, std::string source, std::size_t base_offset)
    : data_(message), source_(std::move(source)), base_(base_offset) {}

Reader Reader::nested(const Field& field) const {
  if (field.type != WireType::length_delimited) fail(field, "expected an embedded message");
  return Reader(field.bytes, source_,
                base_ + static_cast<std::size_t>(field.bytes.data() - data_.data()));
}

void Reader::fail_at(std::size_t offset, const std::string& what) const {
  throw WeightsError(source_, fmt::format("malformed protobuf at byte {}: {}", offset, what));
}

void Reader::fail(const Field& field, const std::string& what) const {
  fail_at(field.offset, fmt::format("field {} ({}): {}", field.number, to_string(field.type), what));
}

std::uint64_t Reader::read_varint() {
  const std::size_t start = base_ + pos_;
  std::uint64_t value = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) fail_at(start, "truncated varint");
    const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
    value |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
    if ((byte & 0x80U) == 0) return value;
  }
  fail_at(start, "varint longer than 10 bytes");
}

std::optional<Field> Reader::next() {
  if (pos_ >= data_.size()) return std::nullopt;
  Field field;
  field.offset = base_ + pos_;
  const std::uint64_t key = read_varint();
  const std::uint64_t number = key >> 3U;
  if (number == 0 || number > 0x1FFFFFFFU) fail_at(field.offset, "invalid field number");
  field.number = static_cast<std::uint32_t>(number);
  const auto wire = static_cast<unsigned>(key & 7U);
  // Checks that `bytes` more are there.
  const auto need = [&](std::uint64_t bytes, const char* what) {
    if (bytes > data_.size() - pos_) {
      fail_at(field.offset, fmt::format("field {}: {} of {} bytes runs past the end ({} left)",
                                        field.number, what, bytes, data_.size() - pos_));
    }
  };
  // A little-endian fixed-size value of `bytes` bytes.
  const auto fixed = [&](WireType type, std::size_t bytes, const char* what) {
    field.type = type;
    need(bytes, what);
    for (std::size_t i = bytes; i-- > 0;) {
      field.value = (field.value << 8U) | static_cast<std::uint8_t>(data_[pos_ + i]);
    }
    pos_ += bytes;
  };
  switch (wire) {
    case 0:
      field.type = WireType::varint;
      field.value = read_varint();
      break;
    case 1: fixed(WireType::fixed64, 8, "fixed64 value"); break;
    case 2: {
      field.type = WireType::length_delimited;
      const std::uint64_t length = read_varint();
      need(length, "length-delimited value");
      field.bytes = data_.substr(pos_, static_cast<std::size_t>(length));
      pos_ += static_cast<std::size_t>(length);
      break;
    }
    case 5: fixed(WireType::fixed32, 4, "fixed32 value"); break;
    default:
      fail_at(field.offset, fmt::format("field {}: unsupported wire type {}{}", field.number, wire,
                                        (wire == 3 || wire == 4 ? " (group)" : "")));
  }
  return field;
}

namespace {

void expect(const Reader& reader, const Field& field, WireType type) {
  if (field.type != type) reader.fail(field, std::string("expected ") + to_string(type));
}

}  // namespace

std::uint64_t as_varint(const Reader& reader, const Field& field) {
  expect(reader, field, WireType::varint);
  return field.value;
}

bool as_bool(const Reader& reader, const Field& field) { return as_varint(reader, field) != 0; }

std::int32_t as_int32(const Reader& reader, const Field& field) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(as_varint(reader, field)));
}

float as_float(const Reader& reader, const Field& field) {
  expect(reader, field, WireType::fixed32);
  return std::bit_cast<float>(static_cast<std::uint32_t>(field.value));
}

std::string_view as_bytes(const Reader& reader, const Field& field) {
  expect(reader, field, WireType::length_delimited);
  return field.bytes;
}

void Writer::raw_varint(std::uint64_t value) {
  while (value >= 0x80U) {
    data_.push_back(static_cast<char>((value & 0x7FU) | 0x80U));
    value >>= 7U;
  }
  data_.push_back(static_cast<char>(value));
}

void Writer::key(std::uint32_t number, WireType type) {
  raw_varint((static_cast<std::uint64_t>(number) << 3U) | static_cast<std::uint64_t>(type));
}

void Writer::varint(std::uint32_t number, std::uint64_t value) {
  key(number, WireType::varint);
  raw_varint(value);
}

void Writer::int32(std::uint32_t number, std::int32_t value) {
  varint(number, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
}

void Writer::float32(std::uint32_t number, float value) {
  key(number, WireType::fixed32);
  auto bits = std::bit_cast<std::uint32_t>(value);
  for (int i = 0; i < 4; ++i, bits >>= 8U) data_.push_back(static_cast<char>(bits & 0xFFU));
}

void Writer::bytes(std::uint32_t number, std::string_view value) {
  key(number, WireType::length_delimited);
  raw_varint(value.size());
  data_.append(value);
}

}  // namespace omnidp::models::text::protobuf

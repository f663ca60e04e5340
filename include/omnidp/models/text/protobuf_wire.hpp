#pragma once
// The protobuf wire format (protobuf.dev, "Encoding"), as much as SentencePiece's ModelProto
// needs: a reader that walks the fields of one serialized message, and a writer. No schema, no
// library: the caller decides what each field number means. Torch-free.
//
// The reader never reads outside the view it was given: every length, varint and fixed-size
// value is checked against the bytes left, and any fault (a truncated field, a length past the
// end, a varint over 10 bytes, field number 0, groups, wire types 6 and 7) is a WeightsError
// naming `source` and the byte offset. Reader and Writer are plain values, not thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace omnidp::models::text::protobuf {

enum class WireType : std::uint8_t {
  varint = 0,
  fixed64 = 1,
  length_delimited = 2,
  fixed32 = 5,
};

[[nodiscard]] const char* to_string(WireType type) noexcept;

struct Field {
  std::uint32_t number = 0;
  WireType type = WireType::varint;
  std::uint64_t value = 0;  // varint, fixed32 and fixed64 fields
  std::string_view bytes;   // length-delimited fields (a view into the message)
  std::size_t offset = 0;   // where the field's key starts in the file
};

class Reader {
 public:
  // `message` must outlive the reader and the fields it returns; `base_offset` is where it
  // starts in the file (offsets in errors count from the file's first byte).
  Reader(std::string_view message, std::string source, std::size_t base_offset = 0);

  // A reader of an embedded message (WeightsError when the field is not length-delimited).
  [[nodiscard]] Reader nested(const Field& field) const;

  // The next field, nullopt after the last one.
  [[nodiscard]] std::optional<Field> next();

  // A WeightsError naming the source, the field and its offset: for callers that find a field
  // of the wrong wire type or an impossible value.
  [[noreturn]] void fail(const Field& field, const std::string& what) const;

  [[nodiscard]] const std::string& source() const noexcept { return source_; }

 private:
  [[noreturn]] void fail_at(std::size_t offset, const std::string& what) const;
  std::uint64_t read_varint();

  std::string_view data_;
  std::size_t pos_ = 0;
  std::string source_;
  std::size_t base_ = 0;
};

// The field's value as the types of a .proto file read it (WeightsError through `reader` when
// the wire type does not fit).
[[nodiscard]] std::uint64_t as_varint(const Reader& reader, const Field& field);
[[nodiscard]] bool as_bool(const Reader& reader, const Field& field);
// int32 fields: negative values are 10-byte varints, truncated to 32 bits as protobuf does.
[[nodiscard]] std::int32_t as_int32(const Reader& reader, const Field& field);
[[nodiscard]] float as_float(const Reader& reader, const Field& field);
[[nodiscard]] std::string_view as_bytes(const Reader& reader, const Field& field);

class Writer {
 public:
  void varint(std::uint32_t number, std::uint64_t value);
  void int32(std::uint32_t number, std::int32_t value);  // sign-extended, as protobuf writes it
  void boolean(std::uint32_t number, bool value) { varint(number, value ? 1 : 0); }
  void float32(std::uint32_t number, float value);
  void bytes(std::uint32_t number, std::string_view value);

  [[nodiscard]] const std::string& data() const noexcept { return data_; }

 private:
  void key(std::uint32_t number, WireType type);
  void raw_varint(std::uint64_t value);

  std::string data_;
};

}  // namespace omnidp::models::text::protobuf

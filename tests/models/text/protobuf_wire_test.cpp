#include "omnidp/models/text/protobuf_wire.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models::text::protobuf {
namespace {

using omnidp::test::error_of;

TEST(ProtobufWire, WriterAndReaderAgreeOnEveryWireType) {
  Writer inner;
  inner.bytes(1, "piece");
  inner.float32(2, -3.25F);
  Writer w;
  w.varint(1, 300);
  w.int32(2, -1);
  w.boolean(3, true);
  w.bytes(4, inner.data());
  w.bytes(5, "");
  // The known encodings: 300 = ac 02; -1 as int32 is a 10-byte varint.
  EXPECT_EQ(w.data().substr(0, 3), std::string("\x08\xac\x02", 3));
  EXPECT_EQ(w.data().substr(3, 11), std::string("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11));

  Reader r(w.data(), "m");
  auto f = r.next();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->number, 1U);
  EXPECT_EQ(as_varint(r, *f), 300U);
  f = r.next();
  EXPECT_EQ(as_int32(r, *f), -1);
  f = r.next();
  EXPECT_TRUE(as_bool(r, *f));
  f = r.next();
  EXPECT_EQ(f->type, WireType::length_delimited);
  auto nested = r.nested(*f);
  auto g = nested.next();
  EXPECT_EQ(as_bytes(nested, *g), "piece");
  g = nested.next();
  EXPECT_EQ(as_float(nested, *g), -3.25F);
  EXPECT_FALSE(nested.next());
  f = r.next();
  EXPECT_EQ(as_bytes(r, *f), "");
  EXPECT_FALSE(r.next());
}

TEST(ProtobufWire, Fixed64FieldsAreRead) {
  const std::string message("\x09\x01\x02\x03\x04\x05\x06\x07\x08", 9);  // field 1, fixed64
  Reader r(message, "m");
  const auto f = r.next();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, WireType::fixed64);
  EXPECT_EQ(f->value, 0x0807060504030201ULL);
}

TEST(ProtobufWire, MalformedMessagesAreWeightsErrorsWithTheirOffset) {
  const auto error = [](const std::string& bytes) {
    return error_of<WeightsError>([&] {
      Reader r(bytes, "spiece.model");
      while (r.next()) {
      }
    });
  };
  EXPECT_EQ(error(std::string("\x08\x80", 2)),
            "spiece.model: malformed protobuf at byte 1: truncated varint");
  EXPECT_EQ(error(std::string("\x08") + std::string(10, '\x80') + "\x01"),
            "spiece.model: malformed protobuf at byte 1: varint longer than 10 bytes");
  // A length of 2^31: far past the end of the message.
  EXPECT_EQ(error(std::string("\x0a\x80\x80\x80\x80\x08xy", 8)),
            "spiece.model: malformed protobuf at byte 0: field 1: length-delimited value of "
            "2147483648 bytes runs past the end (2 left)");
  EXPECT_EQ(
      error(std::string("\x15\x00\x00", 3)),
      "spiece.model: malformed protobuf at byte 0: field 2: fixed32 value of 4 bytes runs past "
      "the end (2 left)");
  EXPECT_EQ(error(std::string("\x0b", 1)),
            "spiece.model: malformed protobuf at byte 0: field 1: unsupported wire type 3 (group)");
  EXPECT_EQ(error(std::string("\x0e", 1)),
            "spiece.model: malformed protobuf at byte 0: field 1: unsupported wire type 6");
  EXPECT_EQ(error(std::string("\x00\x01", 2)),
            "spiece.model: malformed protobuf at byte 0: invalid field number");
}

TEST(ProtobufWire, AFieldOfTheWrongWireTypeIsNamed) {
  Writer w;
  w.varint(1, 7);
  Writer outer;
  outer.bytes(3, "xx");
  outer.bytes(4, w.data());
  Reader r(outer.data(), "spiece.model");
  const auto f = r.next();
  EXPECT_EQ(
      error_of<WeightsError>([&] { (void)as_float(r, *f); }),
      "spiece.model: malformed protobuf at byte 0: field 3 (length-delimited): expected fixed32");
  const auto g = r.next();
  const auto nested = r.nested(*g);
  auto inner = nested;
  const auto h = inner.next();
  // Offsets count from the file's first byte, also inside an embedded message.
  EXPECT_EQ(
      error_of<WeightsError>([&] { (void)as_bytes(inner, *h); }),
      "spiece.model: malformed protobuf at byte 6: field 1 (varint): expected length-delimited");
}

}  // namespace
}  // namespace omnidp::models::text::protobuf

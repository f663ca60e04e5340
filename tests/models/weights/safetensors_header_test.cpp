#include "omnidp/models/weights/safetensors_header.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

// 8-byte little-endian length + header text + `data_bytes` zero bytes.
std::vector<std::uint8_t> file_bytes(const std::string& header, std::size_t data_bytes,
                                     std::uint64_t claimed_length = UINT64_MAX) {
  std::uint64_t n = claimed_length == UINT64_MAX ? header.size() : claimed_length;
  std::vector<std::uint8_t> out;
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<std::uint8_t>(n & 0xFFU));
    n >>= 8U;
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data_bytes, 0);
  return out;
}

SafetensorsHeader parse(const std::vector<std::uint8_t>& bytes) {
  return parse_safetensors_header(bytes, bytes.size(), "test.safetensors");
}

// The WeightsError message of parsing `bytes` ("" if it parses).
std::string error_of(const std::vector<std::uint8_t>& bytes) {
  try {
    (void)parse(bytes);
  } catch (const WeightsError& e) {
    return e.what();
  }
  return "";
}

TEST(SafetensorsHeader, ParsesValidHeader) {
  const std::string h =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]},)"
      R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"e":{"dtype":"I8","shape":[0],"data_offsets":[28,28]}})";
  const auto header = parse(file_bytes(h, 28));
  EXPECT_EQ(header.header_size, h.size());
  EXPECT_EQ(header.data_offset, 8 + h.size());
  ASSERT_EQ(header.tensors.size(), 3U);
  EXPECT_EQ(header.tensors[0].name, "a");
  EXPECT_EQ(header.tensors[1].name, "b");
  EXPECT_EQ(header.tensors[1].dtype, SafetensorsDtype::bf16);
  EXPECT_EQ(header.tensors[1].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(header.tensors[1].begin, 16U);
  EXPECT_EQ(header.tensors[1].end, 28U);
  EXPECT_EQ(header.tensors[1].numel(), 6);
  EXPECT_EQ(header.tensors[2].numel(), 0);
  EXPECT_EQ(header.metadata.at("format"), "pt");
  ASSERT_NE(header.find("b"), nullptr);
  EXPECT_EQ(header.find("b")->nbytes(), 12U);
  EXPECT_EQ(header.find("zz"), nullptr);
}

TEST(SafetensorsHeader, AllDtypesAndItemsizes) {
  const std::vector<std::pair<std::string, std::size_t>> dtypes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
  for (const auto& [name, size] : dtypes) {
    const std::string h = R"({"t":{"dtype":")" + name + R"(","shape":[3],"data_offsets":[0,)" +
                          std::to_string(3 * size) + "]}}";
    const auto header = parse(file_bytes(h, 3 * size));
    EXPECT_EQ(to_string(header.tensors.at(0).dtype), name);
    EXPECT_EQ(itemsize(header.tensors.at(0).dtype), size);
  }
}

TEST(SafetensorsHeader, HugeHeaderLength) {
  const auto msg = error_of(file_bytes("{}", 0, 0xFFFFFFFFFFFFFFF0ULL));
  EXPECT_NE(msg.find("test.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("header length 18446744073709551600 is not in [2, 104857600]"), std::string::npos)
      << msg;
}

TEST(SafetensorsHeader, HeaderLengthPastEndOfFile) {
  const auto msg = error_of(file_bytes("{}", 0, 1000));
  EXPECT_NE(msg.find("header length 1000 exceeds the file size 10 (truncated?)"), std::string::npos)
      << msg;
}

TEST(SafetensorsHeader, ShorterThanLengthPrefix) {
  const std::vector<std::uint8_t> bytes{1, 2, 3};
  EXPECT_NE(error_of(bytes).find("shorter than the 8-byte header length"), std::string::npos);
}

TEST(SafetensorsHeader, BadJson) {
  const auto msg = error_of(file_bytes(R"({"a": {"dtype": "F32",)", 0));
  EXPECT_NE(msg.find("header is not valid JSON"), std::string::npos) << msg;
}

TEST(SafetensorsHeader, NotAnObject) {
  EXPECT_NE(error_of(file_bytes("[1, 2, 3]", 0)).find("header is not a JSON object"),
            std::string::npos);
}

TEST(SafetensorsHeader, UnknownDtypeNamesTensor) {
  const auto msg =
      error_of(file_bytes(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1));
  EXPECT_NE(msg.find("tensor 'w': unsupported dtype 'F8_E4M3'"), std::string::npos) << msg;
}

TEST(SafetensorsHeader, OverlappingOffsets) {
  const auto msg = error_of(file_bytes(
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
      20));
  EXPECT_NE(msg.find("tensors 'a' [0, 16] and 'b' [12, 20] overlap"), std::string::npos) << msg;
}

TEST(SafetensorsHeader, OffsetsOutOfRange) {
  const auto msg =
      error_of(file_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[100,116]}})", 16));
  EXPECT_NE(msg.find("tensor 'a': data_offsets [100, 116] exceed the data section of 16 bytes"),
            std::string::npos)
      << msg;
}

TEST(SafetensorsHeader, TruncatedData) {
  const auto msg =
      error_of(file_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 10));
  EXPECT_NE(msg.find("tensor 'a'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("file truncated"), std::string::npos) << msg;
}

TEST(SafetensorsHeader, SizeDisagreesWithShape) {
  const auto msg =
      error_of(file_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}})", 12));
  EXPECT_NE(
      msg.find(
          "tensor 'a': data_offsets [0, 12] span 12 bytes, but dtype F32 and shape [4] need 16"),
      std::string::npos)
      << msg;
}

TEST(SafetensorsHeader, MalformedEntries) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})",
       "shape entry must be a non-negative integer"},
      {R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,0]}})",
       "shape entry must be a non-negative integer"},
      {R"({"a":{"dtype":"F32","shape":4,"data_offsets":[0,16]}})", "shape is not an array"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0]}})",
       "data_offsets must be [begin, end]"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})",
       "data_offsets end 0 < begin 16"},
      {R"({"a":{"dtype":"F32","shape":[4]}})", "missing field 'data_offsets'"},
      {R"({"a":{"dtype":4,"shape":[4],"data_offsets":[0,16]}})", "dtype is not a string"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16],"x":1}})", "unknown field 'x'"},
      {R"({"a":[1]})", "entry is not a JSON object"},
      {R"({"__metadata__":{"k":1}})", "__metadata__ 'k' is not a string"},
      {R"({"__metadata__":[]})", "__metadata__ is not a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,16]}})",
       "is too large"},
  };
  for (const auto& [header, expected] : cases) {
    const auto msg = error_of(file_bytes(header, 16));
    EXPECT_NE(msg.find(expected), std::string::npos) << header << " -> " << msg;
  }
}

TEST(SafetensorsHeader, PartialBufferIsRejected) {
  const auto bytes = file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  const std::span<const std::uint8_t> head(bytes.data(), 12);
  try {
    (void)parse_safetensors_header(head, bytes.size(), "x");
    FAIL() << "expected a WeightsError";
  } catch (const WeightsError& e) {
    EXPECT_NE(std::string(e.what()).find("only 12 bytes given"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace omnidp::models

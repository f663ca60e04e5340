#include "omnidp/models/text/utf8.hpp"

#include <gtest/gtest.h>

namespace omnidp::models::text {
namespace {

TEST(Utf8, ValidCharacterLengthAsSentencePieceDecodes) {
  EXPECT_EQ(valid_utf8_char_length("a"), 1U);
  EXPECT_EQ(valid_utf8_char_length("\xC3\xA9"), 2U);          // U+00E9
  EXPECT_EQ(valid_utf8_char_length("\xF4\x8F\xBF\xBF"), 4U);  // U+10FFFF
  EXPECT_EQ(valid_utf8_char_length("\xF4\x90\x80\x80"), 0U);  // past it
  EXPECT_EQ(valid_utf8_char_length("\xC0\x80"), 0U);          // an overlong NUL
  EXPECT_EQ(valid_utf8_char_length("\xED\xA0\x80"), 0U);      // a surrogate
  EXPECT_EQ(valid_utf8_char_length("\xE2\x82"), 0U);          // truncated
  EXPECT_EQ(valid_utf8_char_length(""), 0U);
}

TEST(Utf8, LengthFromTheLeadByteAlone) {
  EXPECT_EQ(utf8_length_of_lead('a'), 1U);
  EXPECT_EQ(utf8_length_of_lead('\xC3'), 2U);
  EXPECT_EQ(utf8_length_of_lead('\xE2'), 3U);
  EXPECT_EQ(utf8_length_of_lead('\xF0'), 4U);
  EXPECT_EQ(utf8_length_of_lead('\x80'), 1U);  // a trail byte: one replacement character
}

}  // namespace
}  // namespace omnidp::models::text

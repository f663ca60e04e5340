#include "omnidp/manifest/line_text.hpp"

#include <gtest/gtest.h>

namespace omnidp {
namespace {

TEST(LineText, Utf8SequencesFollowRfc3629) {
  EXPECT_EQ(utf8_sequence("a", 0), 1U);
  EXPECT_EQ(utf8_sequence("\xC3\xA9", 0), 2U);
  EXPECT_EQ(utf8_sequence("\xE7\x8B\x90", 0), 3U);
  EXPECT_EQ(utf8_sequence("\xF0\x9F\xA6\x8A", 0), 4U);
  EXPECT_EQ(utf8_sequence("\xC0\x80", 0), 0U);          // overlong
  EXPECT_EQ(utf8_sequence("\xED\xA0\x80", 0), 0U);      // a surrogate
  EXPECT_EQ(utf8_sequence("\xF4\x90\x80\x80", 0), 0U);  // past U+10FFFF
  EXPECT_EQ(utf8_sequence("\xE7\x8B", 0), 0U);          // cut short
}

TEST(LineText, MessagesEscapeAndCut) {
  EXPECT_EQ(printable("a\"b\\c\n\x01"), "a\\\"b\\\\c\\u000a\\u0001");
  EXPECT_EQ(printable("x\xFFy"), "x\\xffy");
  EXPECT_EQ(printable("\xC3\xA9t\xC3\xA9"), "\xC3\xA9t\xC3\xA9");
  EXPECT_EQ(printable(std::string(70, 'a')), std::string(60, 'a') + "...");
  EXPECT_EQ(printable("\xC3\xA9\xC3\xA9", 1), "\xC3\xA9...");  // cut on a character boundary
  EXPECT_EQ(in_quotes("id"), "\"id\"");
}

TEST(LineText, BlankAndCommentLines) {
  EXPECT_TRUE(is_blank_or_comment(""));
  EXPECT_TRUE(is_blank_or_comment(" \t\r"));
  EXPECT_TRUE(is_blank_or_comment("  # a comment"));
  EXPECT_FALSE(is_blank_or_comment(" {\"id\": \"#\"}"));
}

}  // namespace
}  // namespace omnidp

#include "omnidp/models/text/byt5_tokenizer.hpp"

#include <gtest/gtest.h>

#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {

using Ids = std::vector<std::int64_t>;

// The three strings of the transformers-ref byt5_encoder case and ByT5Tokenizer's ids for them
// (UTF-8 bytes + 3, then </s> = 1), as stored in its io.safetensors.
TEST(ByT5Tokenizer, FixtureStrings) {
  const ByT5Tokenizer tok;
  EXPECT_EQ(tok.encode("A cat walks on the grass, realistic style."),
            (Ids{68,  35,  102, 100, 119, 35,  122, 100, 111, 110, 118, 35,  114, 113, 35,
                 119, 107, 104, 35,  106, 117, 100, 118, 118, 47,  35,  117, 104, 100, 111,
                 108, 118, 119, 108, 102, 35,  118, 119, 124, 111, 104, 49,  1}));
  // "Ünïcödé ✓ 猫が歩く «quoted»": Ü = C3 9C -> 198 159, ✓ = E2 9C 93 -> 229 159 150, ...
  EXPECT_EQ(tok.encode("\xC3\x9Cn\xC3\xAF"
                       "c\xC3\xB6"
                       "d\xC3\xA9 \xE2\x9C\x93 \xE7\x8C\xAB\xE3\x81\x8C\xE6\xAD\xA9\xE3\x81\x8F "
                       "\xC2\xABquoted\xC2\xBB"),
            (Ids{198, 159, 113, 198, 178, 102, 198, 185, 103, 198, 172, 35,  229, 159,
                 150, 35,  234, 143, 174, 230, 132, 143, 233, 176, 172, 230, 132, 146,
                 35,  197, 174, 116, 120, 114, 119, 104, 103, 197, 190, 1}));
  EXPECT_EQ(tok.encode(""), (Ids{1}));
}

TEST(ByT5Tokenizer, EveryByteIsItsValuePlusThree) {
  const ByT5Tokenizer tok;
  EXPECT_EQ(tok.encode(std::string(1, '\0')), (Ids{3, 1}));
  EXPECT_EQ(tok.encode("\xFF"), (Ids{258, 1}));  // not valid UTF-8: bytes are bytes
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.vocab_size(), 384);
}

TEST(ByT5Tokenizer, TruncationKeepsTheEos) {
  const ByT5Tokenizer tok;
  EXPECT_EQ(tok.encode("abcdef", 4), (Ids{100, 101, 102, 1}));
  EXPECT_EQ(tok.encode("ab", 4), (Ids{100, 101, 1}));
  EXPECT_EQ(tok.encode("abcdef", 1), (Ids{1}));
}

TEST(ByT5Tokenizer, SpecialTokensInTheText) {
  const ByT5Tokenizer tok;
  EXPECT_EQ(tok.encode("a</s>"), (Ids{100, 1}));  // no second </s>
  EXPECT_EQ(tok.encode("a<pad>b"), (Ids{100, 0, 101, 1}));
  EXPECT_EQ(tok.encode("<extra_id_0>x<extra_id_124>"), (Ids{259, 123, 383, 1}));
  EXPECT_EQ(tok.encode("<extra_id_x>"),
            (Ids{63, 104, 123, 119, 117, 100, 98, 108, 103, 98, 123, 65, 1}));
}

TEST(ByT5Tokenizer, FolderAddedTokensExtendTheVocabulary) {
  omnidp::test::TempDir dir;
  dir.write("tokenizer_config.json",
            R"({"added_tokens_decoder": {"0": {"content": "<pad>"}, "1": {"content": "</s>"},
                "384": {"content": "<color-0>"}, "385": {"content": "<en-font-0>"}}})");
  const ByT5Tokenizer tok(dir.path());
  EXPECT_EQ(tok.encode("<color-0>Hi<en-font-0>"), (Ids{384, 75, 108, 385, 1}));
  EXPECT_EQ(tok.vocab_size(), 386);
}

}  // namespace
}  // namespace omnidp::models::text

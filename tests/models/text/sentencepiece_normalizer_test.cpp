#include "omnidp/models/text/sentencepiece_normalizer.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models::text {
namespace {
namespace fs = std::filesystem;
using omnidp::test::error_of;

const fs::path kData = fs::path(OMNIDP_SOURCE_DIR) / "tests/models/text/data/sentencepiece";
const std::string kSpace = "\xE2\x96\x81";  // "▁"

SentencePieceModel identity(bool dummy_prefix = true, bool remove_extra = true, bool escape = true) {
  auto m = unigram_word_model({"a"});
  m.add_dummy_prefix = dummy_prefix;
  m.remove_extra_whitespaces = remove_extra;
  m.escape_whitespaces = escape;
  return m;
}

TEST(SentencePieceNormalizer, WhitespaceAsTheNormalizerSpecSays) {
  const SentencePieceNormalizer n(identity(), "m");
  EXPECT_EQ(n.normalize("a b"), kSpace + "a" + kSpace + "b");
  EXPECT_EQ(n.normalize("   a    b   "), kSpace + "a" + kSpace + "b");
  EXPECT_EQ(n.normalize(""), "");
  EXPECT_EQ(n.normalize("    "), "");
  EXPECT_EQ(n.normalize("a\tb"), kSpace + "a\tb") << "only ' ' is whitespace without rules";
  EXPECT_EQ(n.normalize(kSpace + "a"), kSpace + kSpace + "a") << "a literal ▁ is text";

  const SentencePieceNormalizer raw(identity(false, false), "m");
  EXPECT_EQ(raw.normalize("  a  b "), kSpace + kSpace + "a" + kSpace + kSpace + "b" + kSpace);
  EXPECT_EQ(raw.normalize(" "), kSpace);

  const SentencePieceNormalizer unescaped(identity(true, true, false), "m");
  EXPECT_EQ(unescaped.normalize("  a   b "), " a b");

  auto suffix = identity();
  suffix.treat_whitespace_as_suffix = true;
  EXPECT_EQ(SentencePieceNormalizer(suffix, "m").normalize(" a  b"), "a" + kSpace + "b" + kSpace);
}

TEST(SentencePieceNormalizer, MalformedUtf8BecomesOneReplacementCharacterPerByte) {
  const SentencePieceNormalizer n(identity(), "m");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(n.normalize("a\xFF"
                        "b"),
            kSpace + "a" + fffd + "b");
  EXPECT_EQ(n.normalize("\xE2\x82"), kSpace + fffd + fffd) << "a truncated sequence";
  EXPECT_EQ(n.normalize("\xC0\x80"), kSpace + fffd + fffd) << "an overlong NUL";
  EXPECT_EQ(n.normalize("\xED\xA0\x80"), kSpace + fffd + fffd + fffd) << "a surrogate";
  EXPECT_EQ(n.normalize(fffd), kSpace + fffd) << "U+FFFD itself is valid";
}

TEST(SentencePieceNormalizer, UserDefinedPiecesPassUnnormalized) {
  auto m = SentencePieceModel::read(kData / "unigram4k_nfkc_symbols_bytes.model");
  const SentencePieceNormalizer n(m, "m");
  // "☃☃" is a user-defined piece; NFKC leaves it anyway, so add one NFKC would change.
  EXPECT_EQ(n.normalize("\xEF\xBC\xA1@@"), kSpace + "A@@");
  m.pieces.push_back({"\xEF\xBC\xA1", 0.0F, SentencePieceModel::PieceType::user_defined});  // "Ａ"
  EXPECT_EQ(SentencePieceNormalizer(m, "m").normalize("\xEF\xBC\xA1@@"), kSpace + "\xEF\xBC\xA1@@");
}

TEST(SentencePieceNormalizer, TheNfkcCharsmapOfATrainedModel) {
  const auto m = SentencePieceModel::read(kData / "unigram32k_nfkc.model");
  const SentencePieceNormalizer n(m, "m");
  // Fullwidth letters, a ligature, a circled digit, a unit symbol; ideographic space and tab.
  EXPECT_EQ(
      n.normalize("\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3 \xEF\xAC\x81x \xE2\x91\xA0  \xE3\x8E\x8F"),
      kSpace + "ABC" + kSpace + "fix" + kSpace + "1" + kSpace + "kg");
  EXPECT_EQ(n.normalize("\tx\xE3\x80\x80y"), kSpace + "x" + kSpace + "y");
}

TEST(SentencePieceNormalizer, ACorruptCharsmapIsAWeightsError) {
  const auto m = SentencePieceModel::read(kData / "unigram32k_nfkc.model");
  const std::string& blob = m.precompiled_charsmap;
  const auto error = [](std::string charsmap) {
    return error_of<WeightsError>([&] { PrecompiledCharsMap map(charsmap, "m.model"); });
  };
  EXPECT_EQ(error(blob), "");
  EXPECT_EQ(error("abc"),
            "m.model: normalizer precompiled_charsmap: shorter than its header (3 bytes)");
  std::string too_big = blob;
  too_big[3] = '\x7f';
  EXPECT_EQ(error(too_big).rfind("m.model: normalizer precompiled_charsmap: trie of ", 0), 0U);
  // The trie without most of its replacement strings: offsets point past the end.
  const std::size_t trie = static_cast<std::uint8_t>(blob[0]) |
                           (static_cast<std::uint8_t>(blob[1]) << 8U) |
                           (static_cast<std::uint8_t>(blob[2]) << 16U);
  const auto cut = error(blob.substr(0, 4 + trie + 10));
  EXPECT_NE(cut.find("outside the 10 bytes of NUL-terminated strings"), std::string::npos) << cut;
  // Replacement strings without their NUL.
  std::string no_nul = blob;
  for (std::size_t i = 4 + trie; i < no_nul.size(); ++i) {
    if (no_nul[i] == '\0') no_nul[i] = 'x';
  }
  EXPECT_NE(error(no_nul).find("NUL-terminated"), std::string::npos);
  // A model whose charsmap is corrupt cannot be normalized with.
  auto bad = m;
  bad.precompiled_charsmap = "abc";
  EXPECT_THROW(SentencePieceNormalizer(bad, "m.model"), WeightsError);
}

}  // namespace
}  // namespace omnidp::models::text

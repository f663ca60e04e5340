#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {
namespace fs = std::filesystem;

using Ids = std::vector<std::int64_t>;
using PieceType = SentencePieceModel::PieceType;

const std::string kSpace = "\xE2\x96\x81";  // "▁"

SentencePieceModel words_model(bool byte_fallback = false) {
  return unigram_word_model({"the", "cat", "walks", "on", "grass", "a", "dog", "runs"},
                            byte_fallback);
}

TEST(SentencePieceTokenizer, WholeWordPiecesThenEos) {
  const SentencePieceTokenizer tok(words_model(), {}, "words");
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_EQ(tok.pad_id(), 0);
  const auto the = tok.piece_id(kSpace + "the");
  const auto cat = tok.piece_id(kSpace + "cat");
  EXPECT_EQ(the, 3);
  EXPECT_EQ(cat, 4);
  EXPECT_EQ(tok.encode("the cat"), (Ids{the, cat, 1}));
  // The normalizer folds whitespace runs and drops leading and trailing ones.
  EXPECT_EQ(tok.encode("  the   cat "), (Ids{the, cat, 1}));
  EXPECT_EQ(tok.encode(""), (Ids{1}));
  EXPECT_EQ(tok.encode(" \t "), (Ids{tok.piece_id(kSpace), tok.piece_id("\t"), 1}))
      << "identity normalization: a tab is no space";
  // A word outside the vocabulary: its characters (the best path of single pieces).
  EXPECT_EQ(tok.encode("tac"),
            (Ids{tok.piece_id(kSpace), tok.piece_id("t"), tok.piece_id("a"), tok.piece_id("c"), 1}));
}

TEST(SentencePieceTokenizer, UnknownCharactersAreOneIdPerRunOrTheirBytes) {
  const SentencePieceTokenizer plain(words_model(false), {}, "words");
  const auto the = plain.piece_id(kSpace + "the");
  // "ü" and "€" are no pieces: one <unk> (2) for the run, as SentencePiece merges them.
  EXPECT_EQ(plain.encode_pieces("the \xC3\xBC\xE2\x82\xAC"), (Ids{the, plain.piece_id(kSpace), 2}));
  EXPECT_EQ(plain.encode_pieces("\xC3\xBC"
                                "a\xE2\x82\xAC"),
            (Ids{plain.piece_id(kSpace), 2, plain.piece_id("a"), 2}));

  const SentencePieceTokenizer bytes(words_model(true), {}, "words");
  const auto byte_id = [&](int b) {
    return bytes.piece_id(byte_piece(static_cast<std::uint8_t>(b)));
  };
  EXPECT_EQ(byte_id(0xC3), bytes.piece_id("<0xC3>"));
  EXPECT_EQ(bytes.encode_pieces("the \xC3\xBC\xE2\x82\xAC"),
            (Ids{the, bytes.piece_id(kSpace), byte_id(0xC3), byte_id(0xBC), byte_id(0xE2),
                 byte_id(0x82), byte_id(0xAC)}));
  // A malformed byte is normalized to U+FFFD first, whose bytes then fall back.
  EXPECT_EQ(bytes.encode_pieces("\xFF"),
            (Ids{bytes.piece_id(kSpace), byte_id(0xEF), byte_id(0xBF), byte_id(0xBD)}));
}

TEST(SentencePieceTokenizer, UserDefinedPiecesWinAndSkipNormalization) {
  auto model = words_model();
  model.pieces.push_back({"<sep>", 0.0F, PieceType::user_defined});
  model.pieces.push_back({"cat  dog", 0.0F, PieceType::user_defined});
  const SentencePieceTokenizer tok(model, {}, "words");
  const auto sep = tok.piece_id("<sep>");
  const auto cat_dog = tok.piece_id("cat  dog");
  EXPECT_EQ(tok.encode_pieces("the<sep>the"),
            (Ids{tok.piece_id(kSpace + "the"), sep, tok.piece_id("t"), tok.piece_id("h"),
                 tok.piece_id("e")}));
  // A symbol keeps its two spaces (no folding inside it), but they are escaped to "▁▁" as all
  // spaces are, so a user-defined piece with a space never matches: as in SentencePiece.
  EXPECT_EQ(tok.encode_pieces("cat  dog"),
            (Ids{tok.piece_id(kSpace + "cat"), tok.piece_id(kSpace), tok.piece_id(kSpace + "dog")}));
  EXPECT_EQ(tok.encode_pieces("cat dog"),
            (Ids{tok.piece_id(kSpace + "cat"), tok.piece_id(kSpace + "dog")}));
  EXPECT_GT(cat_dog, 0);
}

TEST(SentencePieceTokenizer, UnusedPiecesAreNeverChosen) {
  auto model = words_model();
  model.pieces[4].type = PieceType::unused;  // "▁cat"
  const SentencePieceTokenizer tok(model, {}, "words");
  EXPECT_EQ(tok.encode_pieces("cat"),
            (Ids{tok.piece_id(kSpace), tok.piece_id("c"), tok.piece_id("a"), tok.piece_id("t")}));
}

TEST(SplitIntoWords, AtEachSpaceOrAfterItAsTheModelSays) {
  using Words = std::vector<std::string_view>;
  const std::string s = kSpace;
  const std::string text = s + "ab" + s + s + "c" + s;  // "▁ab▁▁c▁"
  EXPECT_EQ(split_into_words(text, false, false), (Words{s + "ab", s, s + "c", s}));
  EXPECT_EQ(split_into_words(text, false, true), (Words{s + "ab", s + s + "c", s}));
  EXPECT_EQ(split_into_words(text, true, false), (Words{s, "ab" + s, s, "c" + s}));
  EXPECT_EQ(split_into_words(text, true, true), (Words{s, "ab" + s + s, "c" + s}));
  EXPECT_EQ(split_into_words("abc", false, false), (Words{"abc"}));
  EXPECT_TRUE(split_into_words("", false, false).empty());
  EXPECT_TRUE(split_into_words("", true, false).empty());
}

TEST(SentencePieceTokenizer, TruncationKeepsTheEos) {
  const SentencePieceTokenizer tok(words_model(), {}, "words");
  const auto the = tok.piece_id(kSpace + "the");
  const auto cat = tok.piece_id(kSpace + "cat");
  EXPECT_EQ(tok.encode("the cat the grass", 3), (Ids{the, cat, 1}));
}

TEST(SentencePieceTokenizer, FromFolderSplitsAddedTokensFirst) {
  omnidp::test::TempDir folder;
  folder.write("spiece.model", words_model().serialize());
  folder.write("tokenizer_config.json",
               R"({"added_tokens_decoder": {"0": {"content": "<pad>"}, "1": {"content": "</s>"},
                   "2": {"content": "<unk>"}, "39": {"content": "<extra_id_0>"}}})");
  const auto tok = SentencePieceTokenizer::from_folder(folder.path());
  const auto the = tok->piece_id(kSpace + "the");
  const auto cat = tok->piece_id(kSpace + "cat");
  EXPECT_EQ(tok->encode("the</s>"), (Ids{the, 1}));  // no second </s>
  EXPECT_EQ(tok->encode("the<extra_id_0>cat"), (Ids{the, 39, cat, 1}));
}

TEST(SentencePieceTokenizer, MissingOrBrokenModelIsAWeightsError) {
  omnidp::test::TempDir folder;
  EXPECT_EQ(omnidp::test::error_of<WeightsError>(
                [&] { (void)SentencePieceTokenizer::from_folder(folder.path()); }),
            (folder.path() / "spiece.model").string() +
                ": missing: no SentencePiece model (spiece.model, or a Unigram tokenizer.json)");
  folder.write("spiece.model", "not a model");
  EXPECT_THROW((void)SentencePieceTokenizer::from_folder(folder.path()), WeightsError);
}

TEST(SentencePieceTokenizer, OnlyUnigramModelsAreAccepted) {
  auto model = words_model();
  model.model_type = SentencePieceModel::ModelType::bpe;
  EXPECT_EQ(
      omnidp::test::error_of<WeightsError>([&] { SentencePieceTokenizer tok(model, {}, "m.model"); }),
      "m.model: a BPE SentencePiece model: only Unigram models are supported");
  model = words_model();
  model.pieces[1].type = PieceType::normal;  // no control </s>, and no added one
  EXPECT_EQ(
      omnidp::test::error_of<WeightsError>([&] { SentencePieceTokenizer tok(model, {}, "m.model"); }),
      "m.model: the SentencePiece model has no </s> (eos) piece");
}

}  // namespace
}  // namespace omnidp::models::text

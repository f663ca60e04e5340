#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "omnidp/common/error.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {
namespace fs = std::filesystem;

using Ids = std::vector<std::int64_t>;

// A small T5-style model trained here: pad 0, </s> 1, <unk> 2, no <s>; a word model, so that
// every corpus word is one piece "▁word" and the expected ids follow by hand.
class SentencePieceTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!SentencePieceTokenizer::available()) return;
    dir_ = std::make_unique<omnidp::test::TempDir>();
    {
      std::ofstream corpus(dir_->path() / "corpus.txt");
      for (int i = 0; i < 200; ++i) {
        corpus << "the cat walks on the grass\n"
               << "a dog runs in the park\n"
               << "the cat and the dog play on the grass\n";
      }
    }
    SentencePieceTokenizer::train_model(
        "--input=" + (dir_->path() / "corpus.txt").string() +
        " --model_prefix=" + (dir_->path() / "spiece").string() +
        " --vocab_size=20 --model_type=word --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1"
        " --hard_vocab_limit=false --num_threads=1 --minloglevel=2");
  }
  void SetUp() override {
    if (!SentencePieceTokenizer::available()) GTEST_SKIP() << "this build has no SentencePiece";
  }
  static void TearDownTestSuite() { dir_.reset(); }

  static fs::path model_file() { return dir_->path() / "spiece.model"; }
  static std::unique_ptr<omnidp::test::TempDir> dir_;
};
std::unique_ptr<omnidp::test::TempDir> SentencePieceTokenizerTest::dir_;

TEST_F(SentencePieceTokenizerTest, WholeWordPiecesThenEos) {
  ASSERT_TRUE(SentencePieceTokenizer::available());
  const SentencePieceTokenizer tok(model_file());
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_EQ(tok.pad_id(), 0);
  const auto the = tok.piece_id("\xE2\x96\x81the");  // "▁the"
  const auto cat = tok.piece_id(
      "\xE2\x96\x81"
      "cat");
  const auto grass = tok.piece_id("\xE2\x96\x81grass");
  ASSERT_GT(the, 2);
  ASSERT_GT(cat, 2);
  ASSERT_GT(grass, 2);
  EXPECT_EQ(tok.encode("the cat"), (Ids{the, cat, 1}));
  // SentencePiece's normaliser folds whitespace runs.
  EXPECT_EQ(tok.encode("  the   cat "), (Ids{the, cat, 1}));
  EXPECT_EQ(tok.encode(""), (Ids{1}));
}

TEST_F(SentencePieceTokenizerTest, TruncationKeepsTheEos) {
  const SentencePieceTokenizer tok(model_file());
  const auto the = tok.piece_id("\xE2\x96\x81the");
  const auto cat = tok.piece_id(
      "\xE2\x96\x81"
      "cat");
  EXPECT_EQ(tok.encode("the cat the grass", 3), (Ids{the, cat, 1}));
}

TEST_F(SentencePieceTokenizerTest, FromFolderSplitsAddedTokensFirst) {
  omnidp::test::TempDir folder;
  fs::copy_file(model_file(), folder.path() / "spiece.model");
  folder.write("tokenizer_config.json",
               R"({"added_tokens_decoder": {"0": {"content": "<pad>"}, "1": {"content": "</s>"},
                   "2": {"content": "<unk>"}, "39": {"content": "<extra_id_0>"}}})");
  const auto tok = SentencePieceTokenizer::from_folder(folder.path());
  const auto the = tok->piece_id("\xE2\x96\x81the");
  const auto cat = tok->piece_id(
      "\xE2\x96\x81"
      "cat");
  EXPECT_EQ(tok->encode("the</s>"), (Ids{the, 1}));  // no second </s>
  EXPECT_EQ(tok->encode("the<extra_id_0>cat"), (Ids{the, 39, cat, 1}));
}

TEST_F(SentencePieceTokenizerTest, MissingOrBrokenModelIsAWeightsError) {
  omnidp::test::TempDir folder;
  EXPECT_THROW((void)SentencePieceTokenizer::from_folder(folder.path()), WeightsError);
  folder.write("spiece.model", "not a model");
  EXPECT_THROW((void)SentencePieceTokenizer::from_folder(folder.path()), WeightsError);
}

TEST(SentencePieceTokenizer, TrainingErrorsAndUnavailableBuildsAreModelErrors) {
  if (SentencePieceTokenizer::available()) {
    EXPECT_THROW(SentencePieceTokenizer::train_model(
                     "--input=/nonexistent/corpus.txt --model_prefix=/tmp/x"),
                 ModelError);
    return;
  }
  try {
    SentencePieceTokenizer tok("spiece.model");
    FAIL() << "expected ModelError";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("SentencePiece"), std::string::npos);
  }
}

}  // namespace
}  // namespace omnidp::models::text

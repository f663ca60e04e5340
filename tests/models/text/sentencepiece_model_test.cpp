#include "omnidp/models/text/sentencepiece_model.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "omnidp/common/base64.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/text/protobuf_wire.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::text {
namespace {
namespace fs = std::filesystem;
using omnidp::test::error_of;
using PieceType = SentencePieceModel::PieceType;

const fs::path kData = fs::path(OMNIDP_SOURCE_DIR) / "tests/models/text/data/sentencepiece";

TEST(SentencePieceModel, SerializeAndParseRoundTrip) {
  auto m = unigram_word_model({"the", "cat", "naïve"}, /*byte_fallback=*/true);
  m.pieces.push_back({"<sep>", 0.0F, PieceType::user_defined});
  m.pieces.push_back({"zz", -1.5F, PieceType::unused});
  m.add_dummy_prefix = false;
  m.treat_whitespace_as_suffix = true;
  m.precompiled_charsmap = std::string("\x01\x02\x00\x03", 4);
  const auto p = SentencePieceModel::parse(m.serialize(), "m");
  ASSERT_EQ(p.pieces.size(), m.pieces.size());
  for (std::size_t i = 0; i < m.pieces.size(); ++i) {
    EXPECT_EQ(p.pieces[i].piece, m.pieces[i].piece);
    EXPECT_EQ(p.pieces[i].score, m.pieces[i].score);
    EXPECT_EQ(p.pieces[i].type, m.pieces[i].type);
  }
  EXPECT_EQ(p.unk_id, 2);
  EXPECT_EQ(p.eos_id, 1);
  EXPECT_EQ(p.pad_id, 0);
  EXPECT_EQ(p.bos_id, -1);
  EXPECT_TRUE(p.byte_fallback);
  EXPECT_FALSE(p.add_dummy_prefix);
  EXPECT_TRUE(p.remove_extra_whitespaces);
  EXPECT_TRUE(p.treat_whitespace_as_suffix);
  EXPECT_EQ(p.precompiled_charsmap, m.precompiled_charsmap);
  EXPECT_EQ(p.normalizer_name, "identity");
  // The word model: specials, "▁word" pieces, "▁", the characters ("ï" is one), the bytes.
  EXPECT_EQ(m.pieces[3].piece, "\xE2\x96\x81the");
  EXPECT_EQ(m.pieces[5].piece, "\xE2\x96\x81na\xC3\xAFve");
  EXPECT_EQ(m.pieces.size(), 3U + 3 + 1 + 8 + 256 + 2);
}

TEST(SentencePieceModel, ReadsTrainedModels) {
  const auto m = SentencePieceModel::read(kData / "unigram16k_identity_bytes_raw.model");
  EXPECT_EQ(m.pieces.size(), 16000U);
  EXPECT_EQ(m.model_type, SentencePieceModel::ModelType::unigram);
  EXPECT_EQ(m.pieces[0].piece, "<pad>");
  EXPECT_EQ(m.pieces[0].type, PieceType::control);
  EXPECT_EQ(m.pieces[1].piece, "</s>");
  EXPECT_EQ(m.pieces[2].type, PieceType::unknown);
  EXPECT_EQ(m.pieces[3].piece, "<0x00>");
  EXPECT_EQ(m.pieces[3].type, PieceType::byte);
  EXPECT_EQ(m.pieces[258].piece, "<0xFF>");
  EXPECT_TRUE(m.byte_fallback);
  EXPECT_FALSE(m.add_dummy_prefix);
  EXPECT_FALSE(m.remove_extra_whitespaces);
  EXPECT_TRUE(m.precompiled_charsmap.empty());
  const auto nfkc = SentencePieceModel::read(kData / "unigram32k_nfkc.model");
  EXPECT_EQ(nfkc.pieces.size(), 32000U);
  EXPECT_FALSE(nfkc.byte_fallback);
  EXPECT_EQ(nfkc.normalizer_name, "nmt_nfkc");
  EXPECT_GT(nfkc.precompiled_charsmap.size(), 100000U);
  EXPECT_EQ(byte_piece(0x3A), "<0x3A>");
  EXPECT_EQ(byte_of_piece("<0x3A>"), 0x3A);
  EXPECT_EQ(byte_of_piece("<0x3a>"), -1);
  EXPECT_EQ(byte_of_piece("<0x3A"), -1);
}

TEST(SentencePieceModel, TheLoadersRulesAreChecked) {
  const auto error = [](SentencePieceModel m) {
    return error_of<WeightsError>([&] { m.validate("m.model"); });
  };
  auto m = unigram_word_model({"a"});
  EXPECT_EQ(error(m), "");
  m.pieces.push_back(
      {"\xE2\x96\x81"
       "a",
       0.0F, PieceType::user_defined});
  EXPECT_EQ(error(m),
            "m.model: piece 6 '\xE2\x96\x81"
            "a' is already defined");
  m = unigram_word_model({"a"});
  m.pieces.push_back({"</s>", 0.0F, PieceType::normal});  // another namespace than the control one
  EXPECT_EQ(error(m), "");
  m.pieces.push_back({"", 0.0F, PieceType::normal});
  EXPECT_EQ(error(m), "m.model: piece 7 is empty");
  m = unigram_word_model({"a"});
  m.pieces.push_back({"<unk2>", 0.0F, PieceType::unknown});
  EXPECT_EQ(error(m), "m.model: piece 6: a second unknown piece");
  m = unigram_word_model({"a"});
  m.pieces[2].type = PieceType::control;
  EXPECT_EQ(error(m), "m.model: the model has no unknown piece");
  m = unigram_word_model({"a"});
  m.pieces.push_back({"<0x41>", 0.0F, PieceType::byte});
  EXPECT_EQ(error(m), "m.model: piece 6 '<0x41>' is a byte piece without byte_fallback");
  m = unigram_word_model({"a"}, true);
  m.pieces.pop_back();
  EXPECT_EQ(error(m), "m.model: byte_fallback is on but there is no byte piece <0xFF>");
  m = unigram_word_model({"a"}, true);
  m.pieces.back().piece = "<0xff>";
  EXPECT_EQ(error(m), "m.model: piece 261 '<0xff>' is not a byte piece <0xHH>");
  m = unigram_word_model({});
  m.pieces.resize(3);
  EXPECT_EQ(error(m), "m.model: the model has no pieces to encode with");
}

// A model file cut anywhere, or with a field of the wrong type, is a WeightsError naming it.
TEST(SentencePieceModel, MalformedFilesAreWeightsErrors) {
  const auto bytes = unigram_word_model({"the", "cat"}, true).serialize();
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      (void)SentencePieceModel::parse(bytes.substr(0, n), "cut.model");
    } catch (const WeightsError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("cut.model: ", 0), 0U) << e.what();
    }
  }
  EXPECT_EQ(error_of<WeightsError>([&] { (void)SentencePieceModel::parse("", "empty.model"); }),
            "empty.model: the model has no unknown piece");
  protobuf::Writer piece;
  piece.bytes(1, "x");
  piece.varint(2, 5);  // the score as a varint, not a float
  protobuf::Writer file;
  file.bytes(1, piece.data());
  EXPECT_EQ(error_of<WeightsError>([&] { (void)SentencePieceModel::parse(file.data(), "w.model"); }),
            "w.model: malformed protobuf at byte 5: field 2 (varint): expected fixed32");
  // A piece that claims 2^31 bytes.
  EXPECT_EQ(
      error_of<WeightsError>([&] {
        (void)SentencePieceModel::parse(std::string("\x0a\x80\x80\x80\x80\x08", 6), "big.model");
      }),
      "big.model: malformed protobuf at byte 0: field 1: length-delimited value of 2147483648 "
      "bytes runs past the end (0 left)");
  omnidp::test::TempDir dir;
  EXPECT_EQ(
      error_of<WeightsError>([&] { (void)SentencePieceModel::read(dir.path() / "spiece.model"); }),
      (dir.path() / "spiece.model").string() + ": cannot open the SentencePiece model");
  EXPECT_EQ(error_of<WeightsError>([&] { (void)SentencePieceModel::read(dir.path()); }),
            dir.path().string() + ": the SentencePiece model is not a regular file");
}

// The layout transformers' SpmConverter writes for a T5 SentencePiece model.
constexpr const char* kTokenizerJson = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<pad>", "special": true},
    {"id": 1, "content": "</s>", "special": true},
    {"id": 2, "content": "<unk>", "special": true},
    {"id": 6, "content": "<sep>", "special": false}],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Precompiled", "precompiled_charsmap": "@CHARSMAP@"},
    {"type": "Strip", "strip_left": false, "strip_right": true},
    {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]},
  "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true},
  "post_processor": null,
  "decoder": null,
  "model": {"type": "Unigram", "unk_id": 2, "byte_fallback": false,
            "vocab": [["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["\u2581a", -1.5],
                      ["\u2581", -5.0], ["a", -8.0], ["<sep>", 0.0], ["<0x41>", -3.0]]}
})";

std::string tokenizer_json(const std::string& charsmap) {
  std::string text = kTokenizerJson;
  text.replace(text.find("@CHARSMAP@"), 10, charsmap);
  return text;
}

TEST(SentencePieceModel, ReadsAUnigramTokenizerJson) {
  omnidp::test::TempDir dir;
  const auto file =
      dir.write("tokenizer.json", tokenizer_json(base64_encode(std::string("\x05\x00\x00\x00"
                                                                           "abcdef",
                                                                           10))));
  const auto m = SentencePieceModel::read_tokenizer_json(file);
  ASSERT_EQ(m.pieces.size(), 8U);
  EXPECT_EQ(m.pieces[0].type, PieceType::control);
  EXPECT_EQ(m.pieces[2].type, PieceType::unknown);
  EXPECT_EQ(m.pieces[3].piece,
            "\xE2\x96\x81"
            "a");
  EXPECT_EQ(m.pieces[3].score, -1.5F);
  EXPECT_EQ(m.pieces[3].type, PieceType::normal);
  EXPECT_EQ(m.pieces[6].type, PieceType::user_defined);
  EXPECT_EQ(m.pieces[7].type, PieceType::normal) << "no byte fallback: <0x41> is a plain piece";
  EXPECT_EQ(m.unk_id, 2);
  EXPECT_EQ(m.eos_id, 1);
  EXPECT_EQ(m.pad_id, 0);
  EXPECT_EQ(m.bos_id, -1);
  EXPECT_EQ(m.precompiled_charsmap, std::string("\x05\x00\x00\x00"
                                                "abcdef",
                                                10));
  EXPECT_TRUE(m.remove_extra_whitespaces);
  EXPECT_TRUE(m.add_dummy_prefix);
  EXPECT_TRUE(m.escape_whitespaces);
}

TEST(SentencePieceModel, TokenizerJsonFaultsAreNamed) {
  omnidp::test::TempDir dir;
  const auto error = [&](const std::string& text) {
    const auto file = dir.write("tokenizer.json", text);
    return error_of<WeightsError>([&] { (void)SentencePieceModel::read_tokenizer_json(file); });
  };
  const auto file = (dir.path() / "tokenizer.json").string();
  EXPECT_EQ(error(tokenizer_json("not base64!")),
            file + ": normalizer precompiled_charsmap is not base64");
  std::string bpe = tokenizer_json("");
  bpe.replace(bpe.find("\"Unigram\""), 9, "\"BPE\"");
  EXPECT_EQ(error(bpe),
            file + ": model.type is 'BPE': only Unigram tokenizers are SentencePiece models");
  std::string nfc = tokenizer_json("");
  nfc.replace(nfc.find("\"Strip\""), 7, "\"NFC\"");
  EXPECT_EQ(error(nfc), file +
                            ": normalizer 'NFC' has no SentencePiece equivalent (Precompiled, "
                            "Strip and Replace are read)");
  EXPECT_EQ(
      error(R"({"model": {"type": "Unigram"}})").rfind(file + ": not a Unigram tokenizer.json: ", 0),
      0U);
}

}  // namespace
}  // namespace omnidp::models::text

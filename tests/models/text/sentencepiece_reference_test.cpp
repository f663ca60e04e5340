// The native SentencePiece tokenizer against the sentencepiece library itself: Unigram models
// trained with it and the ids it gave for 10^4 strings of every kind (data/sentencepiece/, made
// by scripts/sentencepiece_reference.py; its README says with which version). Every id must
// agree, for every model, from spiece.model and from transformers' tokenizer.json of it.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

namespace omnidp::models::text {
namespace {
namespace fs = std::filesystem;

const fs::path kData = fs::path(OMNIDP_SOURCE_DIR) / "tests/models/text/data/sentencepiece";

const char* const kModels[] = {"unigram1k_identity", "unigram4k_nfkc_symbols_bytes",
                               "unigram16k_identity_bytes_raw", "unigram32k_nfkc"};
// The models whose tokenizer.json transformers wrote (README.md says why only these).
const char* const kTokenizerJsonModels[] = {"unigram32k_nfkc"};

// Unsigned LEB128 varints, the files' only number format.
class VarintFile {
 public:
  explicit VarintFile(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    bytes_ = s.str();
    if (!in) ADD_FAILURE() << "cannot read " << file;
  }
  std::uint64_t number() {
    std::uint64_t value = 0;
    for (unsigned shift = 0; at_ < bytes_.size(); shift += 7) {
      const auto b = static_cast<std::uint8_t>(bytes_[at_++]);
      value |= static_cast<std::uint64_t>(b & 0x7FU) << shift;
      if ((b & 0x80U) == 0) return value;
    }
    ADD_FAILURE() << "truncated varint";
    return 0;
  }
  std::string bytes(std::size_t n) {
    if (n > bytes_.size() - at_) {
      ADD_FAILURE() << "truncated string";
      n = bytes_.size() - at_;
    }
    at_ += n;
    return bytes_.substr(at_ - n, n);
  }
  [[nodiscard]] bool at_end() const { return at_ == bytes_.size(); }

 private:
  std::string bytes_;
  std::size_t at_ = 0;
};

std::vector<std::string> read_strings() {
  VarintFile f(kData / "strings.bin");
  std::vector<std::string> out(f.number());
  for (auto& s : out) s = f.bytes(f.number());
  EXPECT_TRUE(f.at_end());
  return out;
}

std::vector<std::vector<std::int64_t>> read_ids(const std::string& model) {
  VarintFile f(kData / (model + ".ids"));
  std::vector<std::vector<std::int64_t>> out(f.number());
  for (auto& row : out) {
    row.resize(f.number());
    for (auto& id : row) id = static_cast<std::int64_t>(f.number());
  }
  EXPECT_TRUE(f.at_end());
  return out;
}

std::string shown(const std::string& s) {
  std::ostringstream o;
  for (const char c : s.substr(0, 200)) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7F && b != '\\') {
      o << c;
    } else {
      o << "\\x" << std::hex << static_cast<int>(b) << std::dec;
    }
  }
  if (s.size() > 200) o << "... (" << s.size() << " bytes)";
  return o.str();
}

std::string joined(const std::vector<std::int64_t>& ids) {
  std::ostringstream o;
  for (std::size_t i = 0; i < ids.size() && i < 60; ++i) o << (i ? " " : "") << ids[i];
  if (ids.size() > 60) o << " ... (" << ids.size() << " ids)";
  return o.str();
}

// Encodes every string; reports the first few that differ and their count.
void expect_reference_ids(const SentencePieceTokenizer& tok, const std::string& model) {
  static const auto strings = read_strings();
  const auto expected = read_ids(model);
  ASSERT_EQ(expected.size(), strings.size()) << model;
  ASSERT_GE(strings.size(), 10000U);
  std::size_t differ = 0;
  std::size_t ids = 0;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const auto got = tok.encode_pieces(strings[i]);
    ids += got.size();
    if (got == expected[i]) continue;
    if (++differ <= 5) {
      ADD_FAILURE() << model << ": string " << i << " \"" << shown(strings[i])
                    << "\"\n  ours:      " << joined(got)
                    << "\n  reference: " << joined(expected[i]);
    }
  }
  EXPECT_EQ(differ, 0U) << model << ": strings whose ids differ, of " << strings.size();
  EXPECT_GT(ids, strings.size()) << "the strings encode to something";
}

class SentencePieceReference : public ::testing::TestWithParam<const char*> {};

TEST_P(SentencePieceReference, IdsEqualTheLibrarysFromSpieceModel) {
  const std::string model = GetParam();
  const SentencePieceTokenizer tok(kData / (model + ".model"));
  expect_reference_ids(tok, model);
}

class SentencePieceReferenceJson : public ::testing::TestWithParam<const char*> {};

TEST_P(SentencePieceReferenceJson, IdsEqualTheLibrarysFromTokenizerJson) {
  const std::string model = GetParam();
  const auto json = kData / (model + ".tokenizer.json");
  const auto spm = SentencePieceModel::read(kData / (model + ".model"));
  const auto hf = SentencePieceModel::read_tokenizer_json(json);
  // The same vocabulary, types and scores, and the same normalizer.
  ASSERT_EQ(hf.pieces.size(), spm.pieces.size());
  for (std::size_t i = 0; i < spm.pieces.size(); ++i) {
    EXPECT_EQ(hf.pieces[i].piece, spm.pieces[i].piece) << i;
    EXPECT_EQ(hf.pieces[i].score, spm.pieces[i].score) << i;
    EXPECT_EQ(hf.pieces[i].type, spm.pieces[i].type) << i;
  }
  EXPECT_EQ(hf.precompiled_charsmap, spm.precompiled_charsmap);
  EXPECT_EQ(hf.byte_fallback, spm.byte_fallback);
  EXPECT_EQ(hf.add_dummy_prefix, spm.add_dummy_prefix);
  EXPECT_EQ(hf.remove_extra_whitespaces, spm.remove_extra_whitespaces);
  const SentencePieceTokenizer tok(hf, {}, json.string());
  expect_reference_ids(tok, model);
}

INSTANTIATE_TEST_SUITE_P(Models, SentencePieceReference, ::testing::ValuesIn(kModels),
                         [](const auto& model) { return std::string(model.param); });
INSTANTIATE_TEST_SUITE_P(Models, SentencePieceReferenceJson,
                         ::testing::ValuesIn(kTokenizerJsonModels),
                         [](const auto& model) { return std::string(model.param); });

}  // namespace
}  // namespace omnidp::models::text

#pragma once
// The T5 / UMT5 tokenizer: a SentencePiece Unigram model (`spiece.model`, or the Unigram
// `tokenizer.json` of the same folder) encoded natively, followed by `</s>`, as transformers'
// T5Tokenizer does and as diffusers' Wan pipeline feeds UMT5 (docs/models.md, "The UMT5
// tokenizer"). The ids equal those of SentencePieceProcessor::Encode of sentencepiece 0.2.x:
// its normalizer (sentencepiece_normalizer.hpp), the text cut into words (split_into_words),
// the Viterbi search over the pieces of each word with the same float arithmetic
// (unigram_model.cc, EncodeOptimized), unknown characters as one unknown id per run or, with
// byte fallback, as their UTF-8 byte pieces. Torch-free; immutable after construction, encode()
// may be called concurrently.

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "omnidp/models/text/byte_trie.hpp"
#include "omnidp/models/text/sentencepiece_model.hpp"
#include "omnidp/models/text/sentencepiece_normalizer.hpp"
#include "omnidp/models/text/tokenizer.hpp"

namespace omnidp::models::text {

// SentencePiece's SplitIntoWords over normalized text: a word starts at each "▁" (with
// `whitespace_only_pieces`, at the first of a run of them); with `whitespace_as_suffix` a word
// ends after its "▁"s instead. Views into `text`, which they cover in order.
[[nodiscard]] std::vector<std::string_view> split_into_words(std::string_view text,
                                                             bool whitespace_as_suffix,
                                                             bool whitespace_only_pieces);

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // A Unigram model (WeightsError naming `source` for any other kind, or a model without an
  // `</s>`); `added` are matched in the text first, each plain piece between them encoded on
  // its own.
  SentencePieceTokenizer(const SentencePieceModel& model, AddedTokens added,
                         const std::string& source);
  // A serialized model file (spiece.model); WeightsError when it is missing or malformed.
  explicit SentencePieceTokenizer(const std::filesystem::path& model_file, AddedTokens added = {});

  // The file from_folder() reads: `dir`/spiece.model, else `dir`/tokenizer.json. WeightsError
  // naming spiece.model when the folder has neither.
  [[nodiscard]] static std::filesystem::path model_file(const std::filesystem::path& dir);
  // A Hugging Face tokenizer folder: its model file plus the folder's added tokens.
  [[nodiscard]] static std::unique_ptr<SentencePieceTokenizer> from_folder(
      const std::filesystem::path& dir);

  [[nodiscard]] std::vector<std::int64_t> encode(const std::string& text,
                                                 std::size_t max_length = 0) const override;
  [[nodiscard]] std::int64_t pad_id() const noexcept override { return pad_id_; }
  [[nodiscard]] std::int64_t eos_id() const noexcept { return eos_id_; }

  // SentencePieceProcessor::EncodeAsIds of `text` alone: no added tokens, no `</s>`.
  [[nodiscard]] std::vector<std::int64_t> encode_pieces(std::string_view text) const;
  // The id of a piece (e.g. "▁cat"), the unknown id when it has none (PieceToId).
  [[nodiscard]] std::int64_t piece_id(std::string_view piece) const;
  [[nodiscard]] std::size_t vocab_size() const noexcept { return types_.size(); }

 private:
  struct Step {
    std::size_t begin, end;  // in the normalized text
    std::int32_t id;
  };
  // Appends the best segmentation of `word` (at `offset` in the normalized text) to `path`.
  void best_path(std::string_view word, std::size_t offset, std::vector<Step>& path) const;

  SentencePieceNormalizer normalizer_;
  ByteTrie pieces_;  // normal, user-defined and unused pieces
  std::unordered_map<std::string, std::int32_t> reserved_;  // control, unknown and byte pieces
  std::vector<SentencePieceModel::PieceType> types_;
  std::vector<float> scores_;
  std::array<std::int32_t, 256> byte_ids_{};
  bool byte_fallback_ = false;
  bool treat_whitespace_as_suffix_ = false;
  bool allow_whitespace_only_pieces_ = false;
  std::int32_t unk_id_ = 0;
  float min_score_ = 0.0F;
  float max_score_ = 0.0F;
  AddedTokens added_;
  std::int64_t pad_id_ = 0;
  std::int64_t eos_id_ = 1;
};

}  // namespace omnidp::models::text

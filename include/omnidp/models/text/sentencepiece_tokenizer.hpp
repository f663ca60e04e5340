#pragma once
// The T5 / UMT5 tokenizer: a SentencePiece model (`spiece.model` of a snapshot's `tokenizer/`
// folder, Debian's libsentencepiece) followed by `</s>`, as transformers' T5Tokenizer does.
//
// Debian's libsentencepiece carries its own protobuf, which clashes with libtorch's: linked
// into one process they abort at start-up. So SentencePiece lives in a small shim library
// (libomnidp_sentencepiece_shim.so, built beside omnidp::text) that is loaded on first use
// into its own link-map namespace (dlmopen); OMNIDP_SENTENCEPIECE_SHIM overrides its path.
// An optional build part: without libsentencepiece (or in sanitizer builds) available() is
// false and construction throws a ModelError saying why. Torch-free. Thread-safety: encode()
// may be called concurrently (the processor is immutable after loading).

#include <filesystem>
#include <memory>
#include <string>

#include "omnidp/models/text/tokenizer.hpp"

namespace omnidp::models::text {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // True when this build has SentencePiece and its shim loads.
  [[nodiscard]] static bool available() noexcept;
  // SentencePieceTrainer::Train(args) (command-line syntax) through the shim: tests train
  // small models with it. Throws ModelError when training fails or SentencePiece is missing.
  static void train_model(const std::string& args);

  // `model_file` is a serialized SentencePiece model; `added` are matched in the text first
  // (each plain piece between them is encoded on its own). Throws WeightsError when the model
  // cannot be loaded, ModelError when the build lacks SentencePiece.
  explicit SentencePieceTokenizer(const std::filesystem::path& model_file, AddedTokens added = {});
  // A Hugging Face tokenizer folder: spiece.model plus the folder's added tokens.
  [[nodiscard]] static std::unique_ptr<SentencePieceTokenizer> from_folder(
      const std::filesystem::path& dir);

  ~SentencePieceTokenizer() override;

  [[nodiscard]] std::vector<std::int64_t> encode(const std::string& text,
                                                 std::size_t max_length = 0) const override;
  [[nodiscard]] std::int64_t pad_id() const noexcept override { return pad_id_; }
  [[nodiscard]] std::int64_t eos_id() const noexcept { return eos_id_; }
  // The SentencePiece id of a piece (e.g. "▁cat"), the unknown id when it has none.
  [[nodiscard]] std::int64_t piece_id(const std::string& piece) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  AddedTokens added_;
  std::int64_t pad_id_ = 0;
  std::int64_t eos_id_ = 1;
};

}  // namespace omnidp::models::text

#pragma once
// A SentencePiece model as data: the fields of sentencepiece_model.proto's ModelProto that
// encoding reads (the pieces with their scores and types, TrainerSpec's model type, byte
// fallback and special pieces, NormalizerSpec), read from a serialized `spiece.model` or from
// the Unigram `tokenizer.json` that Hugging Face writes for the same vocabulary, and written
// back (tests and the snapshot writer make models with it). Torch-free; a plain value.
//
// Reading checks what SentencePiece's loader checks (ModelInterface::InitializePieces): no
// empty or duplicate piece, exactly one unknown piece, byte pieces only with byte fallback and
// then all 256 of them; any fault, and any malformed protobuf, is a WeightsError naming the file.
// Fields encoding does not need (the trainer's corpus settings, self-test data, the
// denormalizer) are skipped.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace omnidp::models::text {

struct SentencePieceModel {
  // ModelProto.SentencePiece.Type (the proto's numbers).
  enum class PieceType : std::uint8_t {
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6,
  };
  // TrainerSpec.ModelType.
  enum class ModelType : std::uint8_t { unigram = 1, bpe = 2, word = 3, character = 4 };

  struct Piece {
    std::string piece;
    float score = 0.0F;
    PieceType type = PieceType::normal;
  };

  std::vector<Piece> pieces;  // id = index

  // TrainerSpec (proto2 defaults).
  ModelType model_type = ModelType::unigram;
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  bool allow_whitespace_only_pieces = false;
  std::int32_t unk_id = 0;
  std::int32_t bos_id = 1;
  std::int32_t eos_id = 2;
  std::int32_t pad_id = -1;
  std::string unk_piece = "<unk>";
  std::string bos_piece = "<s>";
  std::string eos_piece = "</s>";
  std::string pad_piece = "<pad>";

  // NormalizerSpec.
  std::string normalizer_name;       // "nmt_nfkc", "identity", ... (informational)
  std::string precompiled_charsmap;  // empty: no normalization rules
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;

  // A serialized ModelProto; `source` names it in errors.
  [[nodiscard]] static SentencePieceModel parse(std::string_view bytes, const std::string& source);
  [[nodiscard]] static SentencePieceModel read(const std::filesystem::path& file);
  // Hugging Face's tokenizer.json of a Unigram model (docs/models.md, "The UMT5 tokenizer"):
  // model.vocab / unk_id / byte_fallback, the Precompiled normalizer's charsmap, the Metaspace
  // pre-tokenizer's prefix scheme, and the added tokens' special flags as piece types.
  [[nodiscard]] static SentencePieceModel read_tokenizer_json(const std::filesystem::path& file);

  [[nodiscard]] std::string serialize() const;

  // Throws WeightsError(source, ...) when the pieces break a rule of SentencePiece's loader.
  void validate(const std::string& source) const;
};

// A T5-style Unigram model (<pad> 0, </s> 1, <unk> 2) whose vocabulary is each word as one
// piece "▁word", then "▁" and every character of the words, and with `byte_fallback` the 256
// byte pieces; no normalization rules. For tests and the synthetic snapshots: a word of
// `words` between spaces encodes as its own id.
[[nodiscard]] SentencePieceModel unigram_word_model(const std::vector<std::string>& words,
                                                    bool byte_fallback = false);

// "<0x3A>" for 58, as SentencePiece names byte pieces; and back (-1 when `piece` is none).
[[nodiscard]] std::string byte_piece(std::uint8_t byte);
[[nodiscard]] int byte_of_piece(std::string_view piece);

}  // namespace omnidp::models::text

#pragma once
// The ByT5 byte tokenizer (transformers' ByT5Tokenizer): every UTF-8 byte b is id b + 3, ids
// 0/1/2 are <pad> </s> <unk>, and `</s>` is appended (unless the text already ends with it).
// Used by HunyuanVideo-1.5's glyph encoder (tokenizer_2) and by tiny-wan's byte-level T5: it
// needs no vocabulary file. Torch-free; thread-safe (immutable after construction).

#include <filesystem>

#include "omnidp/models/text/tokenizer.hpp"

namespace omnidp::models::text {

class ByT5Tokenizer final : public Tokenizer {
 public:
  static constexpr std::int64_t kPadId = 0;
  static constexpr std::int64_t kEosId = 1;
  static constexpr std::int64_t kUnkId = 2;
  static constexpr std::int64_t kByteOffset = 3;
  static constexpr std::int64_t kExtraIds = 125;  // <extra_id_0..124> = ids 259..383

  // The default vocabulary: <pad> </s> <unk>, the bytes and the 125 <extra_id_N> sentinels
  // (384 ids).
  ByT5Tokenizer();
  // The default vocabulary plus the added tokens of a tokenizer folder (tokenizer_config.json
  // etc.; the Glyph byT5 of HunyuanVideo-1.5 adds colour and font tokens from id 384 on).
  explicit ByT5Tokenizer(const std::filesystem::path& folder);

  [[nodiscard]] std::vector<std::int64_t> encode(const std::string& text,
                                                 std::size_t max_length = 0) const override;
  [[nodiscard]] std::int64_t pad_id() const noexcept override { return kPadId; }
  // The largest id this tokenizer produces + 1.
  [[nodiscard]] std::int64_t vocab_size() const noexcept { return vocab_size_; }

 private:
  AddedTokens added_;
  std::int64_t vocab_size_ = 0;
};

}  // namespace omnidp::models::text

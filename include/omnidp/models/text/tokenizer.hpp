#pragma once
// Tokenizers of the prompt encoders: the interface, and the added (special) tokens that every
// Hugging Face tokenizer matches in the raw text before its own algorithm runs.
// Torch-free. Thread-safety: const member functions may be called concurrently.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace omnidp::models::text {

// Added tokens ("</s>", "<|im_start|>", the Glyph byT5 colour/font tokens, ...): strings that
// map straight to one id wherever they occur in the text. Matching as Hugging Face's splitting
// on added tokens: the earliest occurrence wins, the longest token among those starting there.
class AddedTokens {
 public:
  struct Piece {
    std::string_view text;  // the plain text between added tokens (id < 0), or the token
    std::int64_t id = -1;   // the added token's id, -1 for plain text
  };

  void add(const std::string& content, std::int64_t id);
  [[nodiscard]] bool empty() const noexcept { return tokens_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return tokens_.size(); }
  // The id of `content` when it is an added token, else -1.
  [[nodiscard]] std::int64_t id_of(std::string_view content) const;
  // The largest id, -1 when empty.
  [[nodiscard]] std::int64_t max_id() const noexcept;
  // Adds every token of `other` (replacing tokens of the same content).
  void merge(const AddedTokens& other);
  // `text` cut into plain pieces and added tokens, in order (views into `text`; no empty plain
  // pieces).
  [[nodiscard]] std::vector<Piece> split(std::string_view text) const;

  // The added tokens of a Hugging Face tokenizer folder: tokenizer_config.json's
  // `added_tokens_decoder`, else tokenizer.json's `added_tokens`, else added_tokens.json.
  // Missing files give no tokens; a malformed file is a WeightsError naming it.
  [[nodiscard]] static AddedTokens from_folder(const std::filesystem::path& dir);

 private:
  std::map<std::string, std::int64_t, std::less<>> tokens_;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  Tokenizer() = default;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // The ids the reference gives for tokenizer(text, add_special_tokens=True, truncation=True,
  // max_length=max_length) without padding (max_length 0: no limit). Special tokens the
  // reference appends (T5's `</s>`) are kept when truncating. Throws InputError for text that
  // is not valid UTF-8 where the algorithm needs it.
  [[nodiscard]] virtual std::vector<std::int64_t> encode(const std::string& text,
                                                         std::size_t max_length = 0) const = 0;
  [[nodiscard]] virtual std::int64_t pad_id() const noexcept = 0;
};

// Truncates `ids` to `max_length` (0: no limit) keeping `reserved` slots for special tokens
// appended afterwards, as Hugging Face's truncation does.
void truncate_for_special_tokens(std::vector<std::int64_t>& ids, std::size_t max_length,
                                 std::size_t reserved);

}  // namespace omnidp::models::text

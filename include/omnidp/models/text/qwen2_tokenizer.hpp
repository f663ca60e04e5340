#pragma once
// The Qwen2 byte-level BPE tokenizer (transformers' Qwen2Tokenizer, used by Qwen2.5-VL and so by
// HunyuanVideo-1.5): NFC normalisation, added tokens (<|im_start|>, <|endoftext|>, ...) split
// off first, the pre-tokenizer regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
//   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (PCRE2 with Unicode properties), GPT-2's byte-to-unicode map, then BPE merges by rank.
// No special tokens are added. Files: vocab.json and merges.txt of a tokenizer folder.
//
// An optional build part: without PCRE2 (e.g. on a machine lacking libpcre2-dev) available()
// is false and construction throws a ModelError saying so. NFC needs ICU: without it the text
// is used as given (normalizes() is false; the log says so once).
// Torch-free. Thread-safety: encode() may be called concurrently.

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "omnidp/models/text/tokenizer.hpp"

namespace omnidp::models::text {

class Qwen2Tokenizer final : public Tokenizer {
 public:
  [[nodiscard]] static bool available() noexcept;   // PCRE2 in this build
  [[nodiscard]] static bool normalizes() noexcept;  // ICU (NFC) in this build

  // `vocab`: byte-level token -> id; `merges`: pairs in rank order (first = highest priority).
  // Throws ModelError when the build lacks PCRE2.
  Qwen2Tokenizer(std::unordered_map<std::string, std::int64_t> vocab,
                 const std::vector<std::pair<std::string, std::string>>& merges, AddedTokens added);
  // A Hugging Face tokenizer folder: vocab.json + merges.txt (else tokenizer.json's BPE model)
  // and its added tokens. Throws WeightsError naming a missing or malformed file.
  [[nodiscard]] static std::unique_ptr<Qwen2Tokenizer> from_folder(const std::filesystem::path& dir);
  ~Qwen2Tokenizer() override;

  [[nodiscard]] std::vector<std::int64_t> encode(const std::string& text,
                                                 std::size_t max_length = 0) const override;
  // The id of <|endoftext|> (Qwen2's pad token), else 0.
  [[nodiscard]] std::int64_t pad_id() const noexcept override { return pad_id_; }

  // The steps, exposed for tests: the regex pieces of plain text (no added-token splitting, no
  // normalisation), and the byte-level BPE tokens of one piece.
  [[nodiscard]] std::vector<std::string> pre_tokenize(const std::string& text) const;
  [[nodiscard]] std::vector<std::string> bpe(const std::string& piece) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unordered_map<std::string, std::int64_t> vocab_;
  std::unordered_map<std::string, int> ranks_;  // "left right" -> rank
  AddedTokens added_;
  std::int64_t pad_id_ = 0;
};

// GPT-2's reversible byte -> printable unicode map (the UTF-8 of one code point per byte), as
// bytes_to_unicode() in transformers: printable Latin-1 bytes map to themselves, the others to
// U+0100 onwards (space 0x20 -> "Ġ" U+0120, newline 0x0A -> "Ċ" U+010A).
[[nodiscard]] const std::string& byte_level_char(unsigned char byte);

// Unicode NFC of UTF-8 text (ICU); the text unchanged when this build has no ICU or when the
// text is ASCII. Throws InputError for invalid UTF-8.
[[nodiscard]] std::string nfc_normalize(const std::string& text);

}  // namespace omnidp::models::text

#pragma once
// SentencePiece's text normalization (normalizer.cc), byte for byte: the precompiled charsmap
// rules (NFKC and friends, compiled by the trainer into a Darts-clone double-array trie), then
// the whitespace handling of the NormalizerSpec: leading, trailing and repeated spaces removed,
// spaces escaped as U+2581 "▁", a dummy "▁" prefix. User-defined pieces pass unchanged, and a
// byte that starts no valid UTF-8 character becomes U+FFFD. Torch-free; immutable after
// construction, const members thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "omnidp/models/text/byte_trie.hpp"
#include "omnidp/models/text/sentencepiece_model.hpp"
#include "omnidp/models/text/utf8.hpp"

namespace omnidp::models::text {

// NormalizerSpec.precompiled_charsmap: <uint32 LE trie size><double array><NUL-terminated
// replacement strings>. The whole trie is walked at construction: a unit index or replacement
// offset outside its buffer or a replacement without its NUL is a WeightsError naming `source`;
// lookups afterwards stay inside the buffers.
class PrecompiledCharsMap {
 public:
  PrecompiledCharsMap() = default;  // no rules
  PrecompiledCharsMap(std::string_view blob, const std::string& source);

  [[nodiscard]] bool empty() const noexcept { return units_.empty(); }
  // The replacement of the longest rule that matches a prefix of `text`, and the bytes that
  // rule consumes (0 when none matches).
  [[nodiscard]] std::pair<std::string_view, std::size_t> longest_prefix(std::string_view text) const;

 private:
  void validate(const std::string& source) const;

  std::vector<std::uint32_t> units_;
  std::string replacements_;
};

class SentencePieceNormalizer {
 public:
  // `source` names the model file in errors.
  SentencePieceNormalizer(const SentencePieceModel& model, const std::string& source);

  [[nodiscard]] std::string normalize(std::string_view text) const;

 private:
  // The normalized form of the first character (or rule) of `text`, and its length in `text`.
  [[nodiscard]] std::pair<std::string_view, std::size_t> normalize_prefix(std::string_view text) const;

  PrecompiledCharsMap charsmap_;
  ByteTrie user_defined_;
  bool add_dummy_prefix_ = true;
  bool remove_extra_whitespaces_ = true;
  bool escape_whitespaces_ = true;
  bool treat_whitespace_as_suffix_ = false;
};

}  // namespace omnidp::models::text

#pragma once
// UTF-8 character lengths as SentencePiece measures them (its normalizer and tokenizer, and the
// model reader's piece scan). Pure functions, thread-safe.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace omnidp::models::text {

// The length of the UTF-8 character at the start of `text` when it is valid (SentencePiece's
// DecodeUTF8: no overlong forms, no surrogates, nothing past U+10FFFF), else 0.
[[nodiscard]] std::size_t valid_utf8_char_length(std::string_view text) noexcept;
// The length SentencePiece gives the character whose first byte is `lead`, from that byte alone.
[[nodiscard]] inline std::size_t utf8_length_of_lead(char lead) noexcept {
  constexpr std::uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[static_cast<std::uint8_t>(lead) >> 4U];
}

}  // namespace omnidp::models::text

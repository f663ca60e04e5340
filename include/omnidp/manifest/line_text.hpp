#pragma once
// How manifest text is shown in messages and which lines are no requests (docs/manifest.md,
// "Errors"): UTF-8 validation, JSON-style escaping of what a message quotes. Pure functions.

#include <cstddef>
#include <string>
#include <string_view>

namespace omnidp {

inline constexpr std::size_t kShownBytes = 60;        // longest value quoted in a message
inline constexpr std::size_t kShownPathBytes = 4096;  // longest path quoted in a message

// Length of the valid UTF-8 sequence starting at text[i] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0 if it is not valid.
[[nodiscard]] std::size_t utf8_sequence(std::string_view text, std::size_t i);

// `text` shown in a message: JSON-style escapes, invalid UTF-8 bytes as \xNN, cut after about
// `limit` bytes (on a character boundary) with "...".
[[nodiscard]] std::string printable(std::string_view text, std::size_t limit = kShownBytes);
// printable() in double quotes.
[[nodiscard]] std::string in_quotes(std::string_view text, std::size_t limit = kShownBytes);

// A line of only whitespace, or whose first non-blank character is '#'.
[[nodiscard]] bool is_blank_or_comment(std::string_view line);

}  // namespace omnidp

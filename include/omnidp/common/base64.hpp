#pragma once
// Standard base64 (RFC 4648, with padding) through OpenSSL's EVP block coder: the HTML report's
// data: URIs, and the precompiled normalizer charsmap of a Hugging Face tokenizer.json.
// Pure functions, thread-safe.

#include <optional>
#include <string>
#include <string_view>

namespace omnidp {

[[nodiscard]] std::string base64_encode(std::string_view bytes);
// The decoded bytes, nullopt when `text` is not padded base64 (a length that is not a multiple
// of 4, a character outside the alphabet, padding in the middle).
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace omnidp

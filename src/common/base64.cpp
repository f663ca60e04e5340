#include "omnidp/common/base64.hpp"

#include <openssl/evp.h>

#include <limits>

namespace omnidp {

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.resize((bytes.size() + 2) / 3 * 4 + 1);  // EVP_EncodeBlock writes a NUL after the text
  std::size_t written = 0;
  // EVP_EncodeBlock takes int lengths: encode in chunks of a multiple of 3 bytes.
  constexpr std::size_t kChunk = 3 * (1U << 28U);
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, bytes.size() - at);
    written += static_cast<std::size_t>(EVP_EncodeBlock(
        reinterpret_cast<unsigned char*>(out.data() + written),
        reinterpret_cast<const unsigned char*>(bytes.data() + at), static_cast<int>(n)));
  }
  out.resize(written);
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0 || text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    return std::nullopt;
  if (text.empty()) return std::string();
  // EVP_DecodeBlock skips leading and trailing whitespace; standard base64 has none.
  for (const char c : text) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '/' || c == '=';
    if (!ok) return std::nullopt;
  }
  std::size_t padding = 0;
  while (padding < 2 && text[text.size() - 1 - padding] == '=') ++padding;
  if (text.substr(0, text.size() - padding).find('=') != std::string_view::npos)
    return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the zero bytes that stand for the padding.
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

}  // namespace omnidp

#include "omnidp/models/text/utf8.hpp"

#include <cstdint>

namespace omnidp::models::text {

std::size_t valid_utf8_char_length(std::string_view s) noexcept {
  if (s.empty()) return 0;
  const auto b = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<std::uint8_t>(s[i]));
  };
  const auto trail = [&](std::size_t i) { return (b(i) & 0xC0U) == 0x80U; };
  const auto valid = [](std::uint32_t cp) {
    return cp < 0xD800U || (cp >= 0xE000U && cp <= 0x10FFFFU);
  };
  if (b(0) < 0x80U) return 1;
  if (s.size() >= 2 && (b(0) & 0xE0U) == 0xC0U) {
    const std::uint32_t cp = ((b(0) & 0x1FU) << 6U) | (b(1) & 0x3FU);
    return trail(1) && cp >= 0x80U && valid(cp) ? 2 : 0;
  }
  if (s.size() >= 3 && (b(0) & 0xF0U) == 0xE0U) {
    const std::uint32_t cp = ((b(0) & 0x0FU) << 12U) | ((b(1) & 0x3FU) << 6U) | (b(2) & 0x3FU);
    return trail(1) && trail(2) && cp >= 0x800U && valid(cp) ? 3 : 0;
  }
  if (s.size() >= 4 && (b(0) & 0xF8U) == 0xF0U) {
    const std::uint32_t cp =
        ((b(0) & 0x07U) << 18U) | ((b(1) & 0x3FU) << 12U) | ((b(2) & 0x3FU) << 6U) | (b(3) & 0x3FU);
    return trail(1) && trail(2) && trail(3) && cp >= 0x10000U && valid(cp) ? 4 : 0;
  }
  return 0;
}

}  // namespace omnidp::models::text

#include "omnidp/common/format.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

namespace omnidp {

std::string fixed(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

std::string shortest(double value) {
  std::array<char, 32> buffer{};  // 24 characters at most ("-2.2250738585072014e-308")
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return std::string(buffer.data(), result.ptr);
}

std::string shortest_real(double value) {
  std::string text = shortest(value);
  if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace omnidp

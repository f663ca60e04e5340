#include "omnidp/cli/number_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <system_error>

#include "omnidp/common/format.hpp"

namespace omnidp::cli {
namespace {

// The text as given, made printable: a control character would break the one-line message.
std::string shown(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7F ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  return "'" + out + "'";
}

}  // namespace

std::string integer_problem(std::string& text, long long lo, long long hi) {
  const std::string range = fmt::format("[{}, {}]", lo, hi);
  const std::size_t sign = text.starts_with('-') ? 1 : 0;
  if (text.size() == sign || text.find_first_not_of("0123456789", sign) != std::string::npos) {
    return fmt::format("{} is not an integer (expected decimal digits in {})", shown(text), range);
  }
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range || value < lo || value > hi) {
    return fmt::format("{} is out of range {}", text, range);
  }
  if (ec != std::errc{} || ptr != text.data() + text.size()) {
    return fmt::format("{} is not an integer (expected decimal digits in {})", shown(text), range);
  }
  text = std::to_string(value);  // "010": CLI11 would read octal 8
  return {};
}

std::string number_problem(const std::string& text, double lo, bool lo_open, double hi) {
  const std::string bounds =
      std::isfinite(hi)
          ? fmt::format("in {}{}, {}]", lo_open ? "(" : "[", shortest(lo), shortest(hi))
          : fmt::format("{} {}", lo_open ? ">" : ">=", shortest(lo));
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size()) {
    return fmt::format("{} is not a number (expected a finite number {})", shown(text), bounds);
  }
  if (ec == std::errc::result_out_of_range || !std::isfinite(value) ||
      (lo_open ? value <= lo : value < lo) || value > hi) {
    return fmt::format("{} is out of range (expected a finite number {})", text, bounds);
  }
  return {};
}

CLI::Validator integer_in(long long lo, long long hi) {
  return {[lo, hi](std::string& text) { return integer_problem(text, lo, hi); },
          fmt::format("INT in [{}, {}]", lo, hi)};
}

CLI::Validator number_in(double lo, bool lo_open, double hi) {
  return {[lo, lo_open, hi](std::string& text) { return number_problem(text, lo, lo_open, hi); },
          std::isfinite(hi)
              ? fmt::format("NUMBER in {}{}, {}]", lo_open ? "(" : "[", shortest(lo), shortest(hi))
              : fmt::format("NUMBER {} {}", lo_open ? ">" : ">=", shortest(lo))};
}

}  // namespace omnidp::cli

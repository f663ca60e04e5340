#include "omnidp/common/error_text.hpp"

#include <fmt/format.h>

#include <array>

namespace omnidp {
namespace {

// Where the first backtrace line starts, or npos.
std::size_t backtrace_start(std::string_view what) {
  static constexpr std::array<std::string_view, 2> kStarts{"Exception raised from ", "frame #0: "};
  std::size_t line = 0;
  while (line < what.size()) {
    const std::string_view rest = what.substr(line);
    for (const auto start : kStarts) {
      if (rest.starts_with(start)) return line;
    }
    const std::size_t nl = what.find('\n', line);
    if (nl == std::string_view::npos) break;
    line = nl + 1;
  }
  return std::string_view::npos;
}

}  // namespace

bool has_backtrace(std::string_view what) {
  return backtrace_start(what) != std::string_view::npos;
}

std::string without_backtrace(std::string_view what) {
  const std::size_t start = backtrace_start(what);
  if (start == std::string_view::npos) return std::string(what);
  std::string_view message = what.substr(0, start);
  while (!message.empty() &&
         (message.back() == '\n' || message.back() == '\r' || message.back() == ' ')) {
    message.remove_suffix(1);
  }
  return std::string(message);
}

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace omnidp

#pragma once
// Numeric command-line options of every tool (issue 52, class 12). CLI11 2.1 converts an
// option's text with strtoull/strtoll in base 0 and strtold: an unsigned "-1" becomes 2^64-1,
// "99999999999999999999" is clamped to 2^64-1 and accepted, "010" is octal 8, and "nan" or
// "inf" pass CLI::PositiveNumber and CLI::Range. These validators run on the text before that
// conversion: an integer option takes decimal digits with an optional leading '-' (no '+',
// blanks, base prefix or exponent) within [lo, hi], and is handed on in canonical form; a
// number option takes a finite decimal number within its bounds. A bad value is a
// CLI::ValidationError naming the option ("--slowest: -1 is out of range [0, 1000000000]"),
// which every tool turns into exit 2.
// Thread-safe: pure functions.

#include <CLI/CLI.hpp>

#include <concepts>
#include <limits>
#include <string>

namespace omnidp::cli {

// The largest count an option takes unless it says otherwise: far past any real use, and short
// enough to print.
inline constexpr long long kMaxCount = 1'000'000'000;

// An integer in [lo, hi].
[[nodiscard]] CLI::Validator integer_in(long long lo, long long hi);

// A finite number >= lo (> lo when `lo_open`), and <= hi where hi is finite.
[[nodiscard]] CLI::Validator number_in(double lo, bool lo_open,
                                       double hi = std::numeric_limits<double>::infinity());

// The problem of `text` as an integer in [lo, hi] ("" when none; `text` is then rewritten in
// canonical form), and as a number (integer_in and number_in's checks, for tests).
[[nodiscard]] std::string integer_problem(std::string& text, long long lo, long long hi);
[[nodiscard]] std::string number_problem(const std::string& text, double lo, bool lo_open, double hi);

// `app.add_option(name, target, description)` with integer_in(lo, hi): the one way the tools
// declare an integer option.
template <std::integral T>
CLI::Option* add_integer_option(CLI::App& app, const std::string& name, T& target,
                                const std::string& description, long long lo, long long hi) {
  return app.add_option(name, target, description)->transform(integer_in(lo, hi))->type_name("N");
}

// `app.add_option(name, target, description)` with number_in(lo, lo_open, hi).
inline CLI::Option* add_number_option(CLI::App& app, const std::string& name, double& target,
                                      const std::string& description, double lo, bool lo_open,
                                      double hi = std::numeric_limits<double>::infinity()) {
  return app.add_option(name, target, description)
      ->transform(number_in(lo, lo_open, hi))
      ->type_name("X");
}

}  // namespace omnidp::cli

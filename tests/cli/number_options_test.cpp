// Issue 52, class 12: numeric command-line options outside their domain. CLI11 2.1 read an
// unsigned "-1" as 2^64-1 (`omni-dp-inspect --slowest -1`), accepted an overflowing
// "99999999999999999999", read "010" as octal and let "nan" and "inf" through its range
// checks. Every number option of every tool goes through cli/number_options.hpp: here the
// validators on their own, then every option of omni-dp-compare and omni-dp-inspect with one bad
// value of each kind (exit 2, the option named); omni-dp-batch's are in batch_test.cpp.

#include "omnidp/cli/number_options.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "omnidp/cli/compare.hpp"
#include "omnidp/cli/inspect.hpp"
#include "run_main.hpp"

namespace omnidp::cli {
namespace {

using omnidp::cli::testing::run_main;

std::string integer_error(std::string text, long long lo, long long hi) {
  return integer_problem(text, lo, hi);
}

TEST(NumberOptions, IntegersAreDecimalDigitsWithinTheirRange) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"-1", "-1 is out of range [0, 100]"},
      {"101", "101 is out of range [0, 100]"},
      {"99999999999999999999", "99999999999999999999 is out of range [0, 100]"},
      {"-99999999999999999999", "-99999999999999999999 is out of range [0, 100]"},
      {"nan", "'nan' is not an integer (expected decimal digits in [0, 100])"},
      {"inf", "'inf' is not an integer (expected decimal digits in [0, 100])"},
      {"-inf", "'-inf' is not an integer (expected decimal digits in [0, 100])"},
      {"1.5", "'1.5' is not an integer (expected decimal digits in [0, 100])"},
      {"1e2", "'1e2' is not an integer (expected decimal digits in [0, 100])"},
      {"0x10", "'0x10' is not an integer (expected decimal digits in [0, 100])"},
      {"+5", "'+5' is not an integer (expected decimal digits in [0, 100])"},
      {" 5", "' 5' is not an integer (expected decimal digits in [0, 100])"},
      {"5 ", "'5 ' is not an integer (expected decimal digits in [0, 100])"},
      {"", "'' is not an integer (expected decimal digits in [0, 100])"},
      {"-", "'-' is not an integer (expected decimal digits in [0, 100])"},
      {"5\n", "'5\\x0a' is not an integer (expected decimal digits in [0, 100])"},
  };
  for (const auto& [text, message] : bad) {
    SCOPED_TRACE(text);
    EXPECT_EQ(integer_error(text, 0, 100), message);
  }
  EXPECT_EQ(integer_error("-3", -2, 2), "-3 is out of range [-2, 2]");
  // Valid values are handed on in canonical form: CLI11 would read "010" as octal 8.
  for (const auto& [text, canonical] : std::vector<std::pair<std::string, std::string>>{
           {"0", "0"}, {"100", "100"}, {"010", "10"}, {"0000", "0"}, {"-0", "0"}}) {
    std::string value = text;
    EXPECT_EQ(integer_problem(value, 0, 100), "") << text;
    EXPECT_EQ(value, canonical);
  }
  std::string negative = "-2";
  EXPECT_EQ(integer_problem(negative, -2, 2), "");
}

TEST(NumberOptions, NumbersAreFiniteWithinTheirBounds) {
  const std::string positive = "(expected a finite number > 0)";
  for (const char* text : {"nan", "-nan", "inf", "-inf", "infinity", "1e999", "0", "-1", "-0"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(number_problem(text, 0.0, true, std::numeric_limits<double>::infinity()),
              std::string(text) + " is out of range " + positive);
  }
  for (const char* text : {"", "abc", "0x10", "+1", " 1", "1 ", "1,5", "30dB"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(number_problem(text, 0.0, true, std::numeric_limits<double>::infinity()),
              "'" + std::string(text) + "' is not a number " + positive);
  }
  EXPECT_EQ(number_problem("1e-300", 0.0, true, std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(number_problem("40.5", 0.0, true, std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(number_problem("0", 0.0, false, 1.0), "");
  EXPECT_EQ(number_problem("1.5", 0.0, false, 1.0),
            "1.5 is out of range (expected a finite number in [0, 1])");
}

// One numeric option of one tool, with what it needs around it to reach the option's check.
struct ToolOption {
  const char* program;
  std::function<int(int, char**)> main;
  std::vector<std::string> before;  // the tool's required arguments and companion options
  std::string option;
  bool integer = true;
};

std::vector<ToolOption> every_number_option() {
  const std::vector<std::string> two_sets{"a", "b"};
  const std::vector<std::string> one_set{"a"};
  return {
      {"omni-dp-compare", compare_main, two_sets, "--max-list"},
      {"omni-dp-compare", compare_main, two_sets, "--max-level-diff"},
      {"omni-dp-compare", compare_main, two_sets, "--min-psnr", false},
      {"omni-dp-inspect", inspect_main, one_set, "--slowest"},
      {"omni-dp-inspect", inspect_main, one_set, "--max-list"},
      {"omni-dp-inspect", inspect_main, {"a", "--html", "r.html"}, "--thumbnails"},
  };
}

TEST(NumberOptions, EveryNumberOptionOfEveryToolRefusesBadValuesNamingTheOption) {
  // One of each kind: negative, overflow, NaN, infinities, a fraction, a base prefix, text.
  const std::vector<std::string> integer_bad{
      "-1", "99999999999999999999", "nan", "inf", "-inf", "1.5", "0x10", "abc"};
  const std::vector<std::string> number_bad{"-1", "0", "1e999", "nan", "inf", "-inf", "abc"};
  for (const ToolOption& t : every_number_option()) {
    for (const std::string& value : t.integer ? integer_bad : number_bad) {
      SCOPED_TRACE(std::string(t.program) + " " + t.option + " " + value);
      std::vector<std::string> args = t.before;
      args.push_back(t.option + "=" + value);  // "-inf" as a separate word reads as an option
      const auto outcome = run_main(t.main, t.program, args);
      EXPECT_EQ(outcome.code, 2);
      const bool named =
          outcome.err.find(t.option + ": " + value + " is out of range") != std::string::npos ||
          outcome.err.find(t.option + ": '" + value + "' is not a") != std::string::npos;
      EXPECT_TRUE(named) << outcome.err;
      EXPECT_EQ(outcome.out, "");
    }
  }
}

}  // namespace
}  // namespace omnidp::cli

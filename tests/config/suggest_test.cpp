#include "omnidp/config/suggest.hpp"

#include <gtest/gtest.h>

namespace omnidp {
namespace {

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0U);
  EXPECT_EQ(edit_distance("abc", ""), 3U);
  EXPECT_EQ(edit_distance("", "abc"), 3U);
  EXPECT_EQ(edit_distance("policy", "policy"), 0U);
  EXPECT_EQ(edit_distance("polcy", "policy"), 1U);    // deletion
  EXPECT_EQ(edit_distance("modle", "model"), 1U);     // adjacent swap
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3U);  // classic example
  EXPECT_EQ(edit_distance("ca", "abc"), 3U);          // OSA (not full Damerau, which gives 2)
}

TEST(Suggest, NearestName) {
  const std::vector<std::string> keys{"policy", "order", "prefetch", "max_retries"};
  EXPECT_EQ(nearest_name("polcy", keys), "policy");
  EXPECT_EQ(nearest_name("ordr", keys), "order");
  EXPECT_EQ(nearest_name("retries", keys), "max_retries");  // contained
  EXPECT_EQ(nearest_name("xyzzy", keys), "");
  EXPECT_EQ(nearest_name("a", keys), "");
  // Ties go to the longer common prefix, then to the earlier candidate.
  EXPECT_EQ(nearest_name("bf32", {"fp32", "bf16"}), "bf16");
  EXPECT_EQ(nearest_name("ab", {"aa", "bb"}), "aa");
}

TEST(Suggest, SuggestionSuffix) {
  const std::vector<std::string> keys{"strict"};
  EXPECT_EQ(suggestion_suffix("strikt", keys), " (did you mean 'strict'?)");
  EXPECT_EQ(suggestion_suffix("zzz", {"a1", "b2"}), " (valid: a1, b2)");
}

}  // namespace
}  // namespace omnidp

#include "omnidp/models/text/byte_trie.hpp"

#include <gtest/gtest.h>

namespace omnidp::models::text {
namespace {

using Matches = std::vector<std::pair<std::size_t, std::int32_t>>;

Matches prefixes(const ByteTrie& trie, std::string_view text) {
  Matches out;
  trie.for_each_prefix(
      text, [&](std::size_t length, std::int32_t value) { out.emplace_back(length, value); });
  return out;
}

TEST(ByteTrie, EveryKeyThatPrefixesTheTextShortestFirst) {
  const ByteTrie trie({{"cat", 2},
                       {"c", 0},
                       {"ca", 1},
                       {"dog", 3},
                       {"\xE2\x96\x81", 4},
                       {"\xE2\x96\x81"
                        "cat",
                        5},
                       {std::string("\xFF\x00x", 3), 6}});
  EXPECT_EQ(trie.size(), 7U);
  EXPECT_EQ(prefixes(trie, "cats"), (Matches{{1, 0}, {2, 1}, {3, 2}}));
  EXPECT_EQ(prefixes(trie,
                     "\xE2\x96\x81"
                     "cat"),
            (Matches{{3, 4}, {6, 5}}));
  EXPECT_EQ(prefixes(trie, std::string("\xFF\x00xy", 4)), (Matches{{3, 6}}));
  EXPECT_TRUE(prefixes(trie, "bird").empty());
  EXPECT_TRUE(prefixes(trie, "").empty());
  EXPECT_EQ(trie.longest_prefix("catalog"), (std::pair<std::size_t, std::int32_t>{3, 2}));
  EXPECT_EQ(trie.longest_prefix("do"), (std::pair<std::size_t, std::int32_t>{0, -1}));
  EXPECT_EQ(trie.find("ca"), 1);
  EXPECT_EQ(trie.find("dog"), 3);
  EXPECT_EQ(trie.find("do"), std::nullopt);
  EXPECT_EQ(trie.find("dogs"), std::nullopt);
}

TEST(ByteTrie, TheFirstOfEqualKeysIsKeptAndEmptyTriesMatchNothing) {
  const ByteTrie trie({{"a", 1}, {"b", 2}, {"a", 3}});
  EXPECT_EQ(trie.size(), 2U);
  EXPECT_EQ(trie.find("a"), 1);
  const ByteTrie empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_TRUE(prefixes(empty, "abc").empty());
  EXPECT_EQ(empty.find(""), std::nullopt);
  EXPECT_TRUE(ByteTrie(std::vector<std::pair<std::string, std::int32_t>>{}).empty());
}

TEST(ByteTrie, AllByteValuesAsLabels) {
  std::vector<std::pair<std::string, std::int32_t>> keys;
  for (int b = 0; b < 256; ++b) keys.emplace_back(std::string(1, static_cast<char>(b)), b);
  const ByteTrie trie(keys);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(trie.find(std::string(1, static_cast<char>(b))), b);
}

}  // namespace
}  // namespace omnidp::models::text

#include "omnidp/manifest/id_set.hpp"

#include <gtest/gtest.h>

#include <string>

namespace omnidp {
namespace {

TEST(IdSet, InsertReportsTheFirstLine) {
  IdSet ids;
  EXPECT_EQ(ids.insert("cat-001", 3), 0U);
  EXPECT_EQ(ids.insert("cat-002", 4), 0U);
  EXPECT_EQ(ids.insert("cat-001", 9), 3U);
  EXPECT_EQ(ids.insert("cat-001", 12), 3U);  // still the first line
  EXPECT_EQ(ids.insert("Cat-001", 13), 0U);  // ids are case-sensitive bytes
  EXPECT_EQ(ids.insert(std::string("a\0b", 3), 14), 0U);
  EXPECT_EQ(ids.insert(std::string("a\0c", 3), 15), 0U);
  EXPECT_EQ(ids.size(), 5U);
}

TEST(IdSet, GrowthKeepsEveryIdAndItsLine) {
  IdSet ids;
  EXPECT_EQ(ids.bytes(), 1024U * 20U);
  constexpr std::size_t kCount = 100000;
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(ids.insert("req-" + std::to_string(i), i + 1), 0U);
  }
  EXPECT_EQ(ids.size(), kCount);
  // At most 3/4 full: 10^5 ids take 2^18 slots of 20 bytes.
  EXPECT_EQ(ids.bytes(), 262144U * 20U);
  for (std::size_t i = 0; i < kCount; i += 997) {
    EXPECT_EQ(ids.insert("req-" + std::to_string(i), kCount + 1), i + 1);
  }
  EXPECT_EQ(ids.size(), kCount);
}

TEST(IdSet, HugeLineNumbersSaturate) {
  IdSet ids;
  EXPECT_EQ(ids.insert("x", 5000000000ULL), 0U);
  EXPECT_EQ(ids.insert("x", 5000000001ULL), 4294967295ULL);
}

}  // namespace
}  // namespace omnidp

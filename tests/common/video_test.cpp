#include "omnidp/common/video.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"

namespace omnidp {
namespace {

TEST(Video, ShaIsOverCOrderBytes) {
  Video v{1, 1, 2, {1, 2, 3, 4, 5, 6}};
  v.check();
  const std::vector<std::uint8_t> bytes{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(video_sha256(v), sha256_hex(std::span(bytes)));
}

TEST(Video, CheckRejectsWrongSize) {
  Video v{1, 2, 2, {1, 2, 3}};
  EXPECT_THROW(v.check(), RuntimeError);
  Video empty{};
  EXPECT_THROW(empty.check(), RuntimeError);
}

}  // namespace
}  // namespace omnidp

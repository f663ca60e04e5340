#include "omnidp/models/layers/video_frames.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

TEST(VideoFromFrames, RoundsToTheNearestLevelAndKeepsTheLayout) {
  // 2 frames of 1x2 pixels: 0.5 -> 127.5 -> 128, 0.25 -> 63.75 -> 64, 0.75 -> 191.25 -> 191,
  // the others k / 255 -> k.
  const auto v =
      torch::tensor({0.0F, 0.5F, 0.25F, 0.75F, 1.0F, 254.0F / 255,  //
                     10.0F / 255, 20.0F / 255, 30.0F / 255, 40.0F / 255, 1.0F / 255, 2.0F / 255});
  const auto frames = v.view({1, 2, 1, 2, 3});
  const Video video = video_from_frames(frames);
  EXPECT_EQ(video.frames, 2);
  EXPECT_EQ(video.height, 1);
  EXPECT_EQ(video.width, 2);
  EXPECT_EQ(video.data, (std::vector<std::uint8_t>{0, 128, 64, 191, 255, 254, 10, 20, 30, 40, 1, 2}));
  EXPECT_EQ(video_from_frames(frames[0].to(torch::kFloat64)).data, video.data);
}

TEST(VideoFromFrames, RejectsOtherShapes) {
  EXPECT_THROW((void)video_from_frames(torch::zeros({2, 4, 4, 4})), ModelError);
  EXPECT_THROW((void)video_from_frames(torch::zeros({2, 4, 4, 3}, torch::kUInt8)), ModelError);
}

// NaN would be stored as level 0 (a black video recorded as ok), infinity as 0 or 255.
TEST(VideoFromFrames, RejectsNonFiniteValues) {
  for (const double bad : {std::nan(""), 1.0 / 0.0, -1.0 / 0.0}) {
    auto frames = torch::full({2, 4, 4, 3}, 0.5);
    frames[1][2][3][0] = bad;
    try {
      (void)video_from_frames(frames);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const ModelError& e) {
      EXPECT_EQ(e.message(),
                "the decoded video has NaN or infinite values (no uint8 level stands for them)");
    }
  }
}

TEST(VideoFromFrames, SameBytesFromTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(9);
  const auto frames = torch::rand({3, 8, 8, 3});
  EXPECT_EQ(video_from_frames(frames.to(torch::kCUDA)).data, video_from_frames(frames).data);
}

}  // namespace
}  // namespace omnidp::models

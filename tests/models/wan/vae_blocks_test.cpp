#include "omnidp/models/wan/vae_blocks.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp::models::wan {
namespace {

using torch::indexing::None;
using torch::indexing::Slice;

float max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  return (a - b).abs().max().item<float>();
}

// Runs `step` over x in chunks of the given frame counts with one cache; concatenates.
template <typename Step>
torch::Tensor chunked(const torch::Tensor& x, const std::vector<std::int64_t>& sizes, Step step) {
  CausalCache cache;
  std::vector<torch::Tensor> outs;
  std::int64_t begin = 0;
  for (const auto n : sizes) {
    cache.begin_chunk();
    outs.push_back(step(x.slice(2, begin, begin + n), cache));
    cache.end_chunk();
    begin += n;
  }
  EXPECT_EQ(begin, x.size(2));
  return torch::cat(outs, 2);
}

TEST(WanVaePatchify, LayoutIsChannelThenWidthThenHeightOffset) {
  const auto x = torch::arange(2 * 3 * 2 * 4 * 6, torch::kFloat32).reshape({2, 3, 2, 4, 6});
  const auto y = patchify(x, 2);
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 12, 2, 2, 3}));
  for (std::int64_t c = 0; c < 3; ++c) {
    for (std::int64_t dh = 0; dh < 2; ++dh) {
      for (std::int64_t dw = 0; dw < 2; ++dw) {
        const auto expected = x.index({Slice(), c, Slice(), Slice(dh, None, 2), Slice(dw, None, 2)});
        EXPECT_TRUE(torch::equal(y.index({Slice(), c * 4 + dw * 2 + dh}), expected))
            << "c=" << c << " dh=" << dh << " dw=" << dw;
      }
    }
  }
  EXPECT_TRUE(torch::equal(unpatchify(y, 2), x));
  EXPECT_TRUE(torch::equal(patchify(x, 1), x));
}

TEST(WanVaePatchify, RejectsSizesNotMultipleOfPatch) {
  EXPECT_THROW((void)patchify(torch::zeros({1, 3, 1, 5, 4}), 2), ModelError);
  EXPECT_THROW((void)patchify(torch::zeros({1, 3, 4, 4}), 2), ModelError);
}

TEST(WanVaeShortcuts, AvgDownIsAveragePoolingWhenChannelsKept) {
  torch::manual_seed(3);
  const auto x = torch::randn({2, 3, 5, 4, 6});
  // 5 frames: one zero frame in front, then (2, 2, 2) windows.
  const auto padded = torch::constant_pad_nd(x, {0, 0, 0, 0, 1, 0});
  const auto pooled = torch::avg_pool3d(padded, {2, 2, 2});
  EXPECT_LT(max_abs_diff(avg_down_3d(x, 3, 2, 2), pooled), 1e-6F);
}

TEST(WanVaeShortcuts, AvgDownAveragesChannelGroups) {
  // in 4, out 2, no spatial/temporal factor: channel pairs (0,1) and (2,3) are averaged.
  const auto x = torch::arange(4, torch::kFloat32).reshape({1, 4, 1, 1, 1});
  const auto y = avg_down_3d(x, 2, 1, 1);
  EXPECT_FLOAT_EQ(y[0][0].item<float>(), 0.5F);
  EXPECT_FLOAT_EQ(y[0][1].item<float>(), 2.5F);
}

TEST(WanVaeShortcuts, DupUpIsNearestUpsamplingAndDropsFirstFramesOnFirstChunk) {
  torch::manual_seed(4);
  const auto x = torch::randn({1, 3, 3, 2, 2});
  const auto nearest = x.repeat_interleave(2, 2).repeat_interleave(2, 3).repeat_interleave(2, 4);
  EXPECT_TRUE(torch::equal(dup_up_3d(x, 3, 2, 2, false), nearest));
  EXPECT_TRUE(torch::equal(dup_up_3d(x, 3, 2, 2, true), nearest.slice(2, 1)));
  // Channel duplication: in 2 -> out 4 with factor 1 repeats each channel twice.
  const auto c = torch::arange(2, torch::kFloat32).reshape({1, 2, 1, 1, 1});
  const auto d = dup_up_3d(c, 4, 1, 1, false);
  EXPECT_TRUE(torch::equal(d.flatten(), torch::tensor({0.0F, 0.0F, 1.0F, 1.0F})));
}

// `step` run over x chunked by each of `chunkings` equals `expected` within float32 rounding.
template <typename Step>
void expect_every_chunking(const torch::Tensor& x,
                           const std::vector<std::vector<std::int64_t>>& chunkings,
                           const torch::Tensor& expected, Step step) {
  for (const auto& sizes : chunkings) {
    EXPECT_LT(max_abs_diff(chunked(x, sizes, step), expected), 1e-5F) << "chunks of " << sizes.size();
  }
}

TEST(WanVaeRmsNorm, NormalizesOverChannelsTimesSqrtDimAndGamma) {
  torch::manual_seed(5);
  WanRMSNorm norm(4, false);
  norm->gamma.data().copy_(torch::tensor({1.0F, 2.0F, 0.5F, -1.0F}).reshape({4, 1, 1, 1}));
  const auto x = torch::randn({2, 4, 3, 2, 2});
  const auto expected = x / x.pow(2).sum(1, true).sqrt() * 2.0 * norm->gamma;
  EXPECT_LT(max_abs_diff(norm->forward(x), expected), 1e-5F);
  // All-zero input stays zero (eps guards the division).
  EXPECT_EQ(norm->forward(torch::zeros({1, 4, 1, 1, 1})).abs().max().item<float>(), 0.0F);
}

TEST(WanVaeCausalConv, EqualsFrontZeroPaddedConvWhateverTheChunking) {
  torch::manual_seed(6);
  const std::array<std::int64_t, 3> k3{3, 3, 3}, one{1, 1, 1};
  WanCausalConv3d conv(3, 5, k3, one, one);
  const auto x = torch::randn({2, 3, 7, 5, 4});
  torch::NoGradGuard no_grad;
  const auto expected =
      torch::conv3d(torch::constant_pad_nd(x, {1, 1, 1, 1, 2, 0}), conv->weight, conv->bias);
  EXPECT_LT(max_abs_diff(conv->forward(x), expected), 1e-5F);
  expect_every_chunking(x, {{1, 1, 1, 1, 1, 1, 1}, {1, 4, 2}, {3, 4}, {7}}, expected,
                        [&](const torch::Tensor& part, CausalCache& cache) {
                          return conv->forward(part, &cache.next_slot());
                        });
}

// The reference's temporal upsampler over a whole latent sequence: the first frame passes,
// the others go through a causal time_conv (zero context) and each becomes two frames.
TEST(WanVaeResample, Upsample3dStreamsLikeTheReference) {
  torch::manual_seed(7);
  WanResample up(4, WanResampleMode::upsample3d, 4);
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({1, 4, 4, 3, 2});
  // Expected: frame 0 as is, frames 1..3 through time_conv with 2 zero frames in front.
  const auto rest = x.slice(2, 1);
  const auto tc = torch::conv3d(torch::constant_pad_nd(rest, {0, 0, 0, 0, 2, 0}),
                                up->time_conv->weight, up->time_conv->bias);  // [1, 8, 3, 3, 2]
  std::vector<torch::Tensor> frames{x.slice(2, 0, 1)};
  for (std::int64_t t = 0; t < 3; ++t) {
    frames.push_back(tc.slice(1, 0, 4).slice(2, t, t + 1));
    frames.push_back(tc.slice(1, 4, 8).slice(2, t, t + 1));
  }
  const auto doubled = torch::cat(frames, 2);  // 7 frames
  const auto& conv = up->resample->ptr<torch::nn::Conv2dImpl>(1);
  const auto per_frame = doubled.permute({0, 2, 1, 3, 4}).reshape({7, 4, 3, 2});
  const auto spatial =
      torch::conv2d(torch::upsample_nearest2d(per_frame, {6, 4}), conv->weight, conv->bias, 1, 1);
  const auto expected = spatial.reshape({1, 7, 4, 6, 4}).permute({0, 2, 1, 3, 4});
  expect_every_chunking(
      x, {{1, 1, 1, 1}, {2, 2}, {1, 3}, {4}}, expected,
      [&](const torch::Tensor& part, CausalCache& cache) { return up->forward(part, cache); });
}

// The reference's temporal downsampler: the first frame passes, then stride-2 windows of 3
// over the whole stream (starting at frame 0).
TEST(WanVaeResample, Downsample3dStreamsLikeTheReference) {
  torch::manual_seed(8);
  WanResample down(4, WanResampleMode::downsample3d, 4);
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 4, 9, 6, 4});
  const auto& conv = down->resample->ptr<torch::nn::Conv2dImpl>(1);
  const auto per_frame = x.permute({0, 2, 1, 3, 4}).reshape({18, 4, 6, 4});
  const auto spatial =
      torch::conv2d(torch::constant_pad_nd(per_frame, {0, 1, 0, 1}), conv->weight, conv->bias, 2)
          .reshape({2, 9, 4, 3, 2})
          .permute({0, 2, 1, 3, 4});
  const auto strided = torch::conv3d(spatial, down->time_conv->weight, down->time_conv->bias,
                                     {2, 1, 1});  // 4 frames
  const auto expected = torch::cat({spatial.slice(2, 0, 1), strided}, 2);
  ASSERT_EQ(expected.size(2), 5);
  expect_every_chunking(
      x, {{1, 4, 4}, {1, 8}, {9}, {5, 4}}, expected,
      [&](const torch::Tensor& part, CausalCache& cache) { return down->forward(part, cache); });
}

TEST(WanVaeBlocks, ParameterNamesFollowTheDiffusersLayout) {
  WanResidualUpBlock block(8, 4, 1, true, true);
  std::vector<std::string> names;
  for (const auto& p : block->named_parameters()) {
    names.push_back(p.key());
  }
  const std::vector<std::string> expected{
      "resnets.0.norm1.gamma",          "resnets.0.conv1.weight",
      "resnets.0.conv1.bias",           "resnets.0.norm2.gamma",
      "resnets.0.conv2.weight",         "resnets.0.conv2.bias",
      "resnets.0.conv_shortcut.weight", "resnets.0.conv_shortcut.bias",
      "resnets.1.norm1.gamma",          "resnets.1.conv1.weight",
      "resnets.1.conv1.bias",           "resnets.1.norm2.gamma",
      "resnets.1.conv2.weight",         "resnets.1.conv2.bias",
      "upsampler.resample.1.weight",    "upsampler.resample.1.bias",
      "upsampler.time_conv.weight",     "upsampler.time_conv.bias"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(block->resnets->ptr<WanResidualBlockImpl>(0)->norm1->gamma.sizes(),
            (std::vector<std::int64_t>{8, 1, 1, 1}));
  EXPECT_EQ(block->upsampler->time_conv->weight.sizes(), (std::vector<std::int64_t>{8, 4, 3, 1, 1}));
}

}  // namespace
}  // namespace omnidp::models::wan

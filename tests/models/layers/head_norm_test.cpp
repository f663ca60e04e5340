// The RMSNorm across heads: the whole norm is rms_norm_rope, its shards on the in-process
// backend each hold their columns and normalise by the whole row, and the slice it declares.
#include "omnidp/models/layers/head_norm.hpp"

#include <gtest/gtest.h>

#include "models/in_process_group.hpp"
#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models {
namespace {

using testing::max_diff;
using testing::on_group;

TEST(HeadNorm, ShardsNormaliseByTheWholeRow) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  const auto x = torch::randn({2, 5, 16});
  const auto bias = torch::randn({16});
  const auto gain = torch::rand({16}) + 0.5;
  const auto angles = torch::randn({5, 1, 2});
  const auto freqs = torch::complex(angles.cos(), angles.sin());  // head_dim 4
  HeadNorm whole(16, 1e-6, TensorShard{}, ParamSpec{}, "m");
  EXPECT_TRUE(torch::equal(whole->weight, torch::ones({16})));  // gains start at one
  whole->weight.copy_(gain);
  const auto want = whole->forward(x, freqs, 4, bias);
  EXPECT_TRUE(torch::equal(want, rms_norm_rope(x, gain, 1e-6, freqs, 4, bias)));
  EXPECT_TRUE(whole->parameter_slices().empty());
  for (const int size : {2, 4}) {
    std::vector<torch::Tensor> got(static_cast<std::size_t>(size));
    on_group(size, [&](int r, Collective& c) {
      torch::NoGradGuard guard;
      const auto cols = [&](const torch::Tensor& t) { return t.chunk(size, -1)[r].contiguous(); };
      HeadNorm shard(16, 1e-6, TensorShard{r, size}, ParamSpec{}, "m");
      EXPECT_EQ(shard->parameter_slices(),
                (std::vector<std::pair<std::string, TensorSlice>>{{"weight", {0, r, size}}}));
      shard->weight.copy_(cols(gain));
      shard->bind_tensor_group(&c);
      got[static_cast<std::size_t>(r)] = shard->forward(cols(x), freqs, 4, cols(bias));
    });
    for (int r = 0; r < size; ++r) {
      EXPECT_LT(max_diff(got[static_cast<std::size_t>(r)], want.chunk(size, -1)[r]), 1e-5)
          << size << " " << r;
    }
  }
  HeadNorm sharded(16, 1e-6, TensorShard{0, 2}, ParamSpec{}, "m");
  EXPECT_THROW(sharded->bind_tensor_group(nullptr), ModelError);
  EXPECT_THROW(HeadNorm(6, 1e-6, TensorShard{0, 4}, ParamSpec{}, "m"), ConfigError);
}

}  // namespace
}  // namespace omnidp::models

// The tensor-parallel helpers on the in-process backend (threads): the RMSNorm across split
// columns equals the unsplit operation; shard sizes and group checks. The row-split linear
// layer is parallel_linear_test's.
#include "omnidp/models/layers/tensor_parallel.hpp"

#include <gtest/gtest.h>

#include "models/in_process_group.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models {
namespace {

using testing::max_diff;
using testing::on_group;

TEST(TensorParallel, TheShardedNormEqualsTheWholeOperation) {
  torch::manual_seed(4);
  const auto x = torch::randn({2, 6, 16});
  const auto norm_weight = torch::rand({16}) + 0.5;
  const auto norm_bias = torch::randn({16});
  const auto angles = torch::randn({6, 1, 2});
  const auto freqs = torch::complex(angles.cos(), angles.sin());  // head_dim 4
  const auto want_norm = rms_norm_rope(x, norm_weight, 1e-6, freqs, 4, norm_bias);
  for (const int size : {2, 4}) {
    std::vector<torch::Tensor> norm(static_cast<std::size_t>(size));
    on_group(size, [&](int r, Collective& c) {
      const auto cols = [&](const torch::Tensor& t) { return t.chunk(size, -1)[r].contiguous(); };
      norm[static_cast<std::size_t>(r)] =
          sharded_rms_norm_rope(&c, cols(x), cols(norm_weight), 1e-6, freqs, 4, 16, cols(norm_bias));
    });
    for (int r = 0; r < size; ++r) {
      const auto i = static_cast<std::size_t>(r);
      EXPECT_LT(max_diff(norm[i], want_norm.chunk(size, -1)[r]), 1e-5) << size << " " << r;
    }
  }
  // A null group is the single-rank operation, bit for bit.
  EXPECT_TRUE(torch::equal(
      sharded_rms_norm_rope(nullptr, x, norm_weight, 1e-6, freqs, 4, 16, norm_bias), want_norm));
  EXPECT_TRUE(torch::equal(reduce_partial(nullptr, x), x));
}

TEST(TensorParallel, ShardPartDividesOrNamesTheCount) {
  EXPECT_EQ(shard_part(24, {1, 4}, "m", "attention heads"), 6);
  EXPECT_EQ(shard_part(24, {0, 1}, "m", "attention heads"), 24);
  try {
    (void)shard_part(24, {0, 5}, "WanTransformer3DModel", "attention heads");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "parallel.tensor_parallel_size");
    EXPECT_EQ(e.message(),
              "WanTransformer3DModel has 24 attention heads, which tensor_parallel_size 5 does not "
              "divide");
  }
  EXPECT_THROW((void)shard_part(24, {2, 2}, "m", "heads"), ConfigError);
  EXPECT_THROW((void)shard_part(24, {0, 0}, "m", "heads"), ConfigError);
}

}  // namespace
}  // namespace omnidp::models

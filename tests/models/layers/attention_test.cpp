#include "omnidp/models/layers/attention.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

TEST(Attention, MatchesExplicitSoftmax) {
  torch::manual_seed(0);
  const auto q = torch::randn({1, 2, 5, 8});
  const auto k = torch::randn({1, 2, 7, 8});
  const auto v = torch::randn({1, 2, 7, 8});
  const auto ref =
      torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(8.0), -1), v);
  EXPECT_LT((omnidp::models::scaled_dot_product_attention(q, k, v) - ref).abs().max().item<float>(),
            1e-5F);
}

TEST(Attention, BoolMaskExcludesKeys) {
  torch::manual_seed(1);
  const auto q = torch::randn({1, 1, 3, 4});
  const auto k = torch::randn({1, 1, 5, 4});
  const auto v = torch::randn({1, 1, 5, 4});
  auto mask = torch::ones({1, 1, 1, 5}, torch::kBool);
  mask.index_put_({0, 0, 0, torch::indexing::Slice(3, 5)}, false);
  using torch::indexing::Slice;
  const auto ref = omnidp::models::scaled_dot_product_attention(
      q, k.index({Slice(), Slice(), Slice(0, 3)}), v.index({Slice(), Slice(), Slice(0, 3)}));
  EXPECT_LT(
      (omnidp::models::scaled_dot_product_attention(q, k, v, mask) - ref).abs().max().item<float>(),
      1e-6F);
}

TEST(AttentionBackend, ParsesTheConfigNamesAndRejectsOthers) {
  EXPECT_EQ(parse_attention_backend("auto"), AttentionBackend::automatic);
  EXPECT_EQ(parse_attention_backend("flash"), AttentionBackend::flash);
  EXPECT_EQ(parse_attention_backend("cudnn"), AttentionBackend::cudnn);
  EXPECT_EQ(parse_attention_backend("efficient"), AttentionBackend::efficient);
  EXPECT_EQ(parse_attention_backend("math"), AttentionBackend::math);
  try {
    (void)parse_attention_backend("fa3");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "attention backend must be auto, flash, cudnn, efficient or math, got 'fa3'");
  }
}

TEST(AttentionBackend, ChoosingOneKeepsTheResults) {
  // On the CPU every choice runs the same kernel; on CUDA the fallbacks keep every shape working.
  torch::manual_seed(2);
  const auto q = torch::randn({1, 2, 5, 8});
  const auto k = torch::randn({1, 2, 7, 8});
  const auto v = torch::randn({1, 2, 7, 8});
  const auto ref = omnidp::models::scaled_dot_product_attention(q, k, v);
  for (const auto b : {AttentionBackend::cudnn, AttentionBackend::flash, AttentionBackend::math,
                       AttentionBackend::automatic}) {
    set_attention_backend(b);
    EXPECT_LT((omnidp::models::scaled_dot_product_attention(q, k, v) - ref).abs().max().item<float>(),
              1e-6F);
  }
}

}  // namespace
}  // namespace omnidp::models

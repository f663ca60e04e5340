#include "omnidp/models/layers/attention.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/cuda_kernels.hpp"

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

// Keys and values padded as attention_padded_keys expects: `padding` copies of the last key,
// zero values. k, v: [B, H, S, D].
std::pair<torch::Tensor, torch::Tensor> pad_keys(const torch::Tensor& k, const torch::Tensor& v,
                                                 std::int64_t padding) {
  const auto last = k.narrow(2, k.size(2) - 1, 1).expand({-1, -1, padding, -1});
  const auto zeros = torch::zeros({v.size(0), v.size(1), padding, v.size(3)}, v.options());
  return {torch::cat({k, last}, 2), torch::cat({v, zeros}, 2)};
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().max().item<double>();
}

TEST(AttentionPaddedKeys, EqualsTheAttentionOverTheRealKeys) {
  torch::manual_seed(3);
  const auto q = torch::randn({2, 3, 37, 16}, torch::kFloat64);
  const auto k = torch::randn({2, 3, 45, 16}, torch::kFloat64);
  const auto v = torch::randn({2, 3, 45, 16}, torch::kFloat64);
  const auto ref = omnidp::models::scaled_dot_product_attention(q, k, v);
  for (const std::int64_t padding : {1, 19, 83, 127}) {
    SCOPED_TRACE("padding " + std::to_string(padding));
    const auto [kp, vp] = pad_keys(k, v, padding);
    // Without the correction the padding would take a share of every row.
    EXPECT_GT(max_diff(omnidp::models::scaled_dot_product_attention(q, kp, vp), ref), 1e-2);
    EXPECT_LT(max_diff(attention_padded_keys(q, kp, vp, padding), ref), 1e-12);
  }
  EXPECT_TRUE(torch::equal(attention_padded_keys(q, k, v, 0), ref));
}

TEST(AttentionPaddedKeys, RowsWhoseScoresAreAllFarBelowZeroKeepTheirValues) {
  // Every key close to u, the queries along -u: every score near -300. Zero padding keys (score
  // 0) would take e^300 times the real keys' share; copies of a real key take a bounded one.
  torch::manual_seed(4);
  const auto u = torch::randn({1, 1, 1, 16}, torch::kFloat64);
  const auto k = u * 5.0 + 0.1 * torch::randn({1, 1, 40, 16}, torch::kFloat64);
  const auto q = -u * 240.0 / u.pow(2).sum() + 0.1 * torch::randn({1, 1, 9, 16}, torch::kFloat64);
  const auto v = torch::randn({1, 1, 40, 16}, torch::kFloat64);
  const auto scores = torch::matmul(q, k.transpose(-2, -1)) / 4.0;
  ASSERT_LT(scores.max().item<double>(), -250.0);
  const auto ref = omnidp::models::scaled_dot_product_attention(q, k, v);
  const auto [kp, vp] = pad_keys(k, v, 88);
  const auto out = attention_padded_keys(q, kp, vp, 88);
  EXPECT_FALSE(out.isnan().any().item<bool>());
  EXPECT_LT(max_diff(out, ref), 1e-9);
}

TEST(AttentionPaddedKeys, RejectsAPaddingNotShorterThanTheKeys) {
  const auto q = torch::randn({1, 1, 2, 8});
  const auto k = torch::randn({1, 1, 3, 8});
  try {
    (void)attention_padded_keys(q, k, k, 3);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "attention_padded_keys: 3 padding keys of 3");
  }
  EXPECT_THROW((void)attention_padded_keys(q, k, k, -1), std::invalid_argument);
}

TEST(JointAttention, EqualsTheAttentionOverTheConcatenatedKeys) {
  torch::manual_seed(5);
  // [B, S, H, D] parts: video tokens and text.
  const auto q = torch::randn({2, 11, 3, 8});
  const auto kv = torch::randn({2, 9, 3, 8});
  const auto kt = torch::randn({2, 4, 3, 8});
  const auto vv = torch::randn({2, 9, 3, 8});
  const auto vt = torch::randn({2, 4, 3, 8});
  const auto ref = omnidp::models::scaled_dot_product_attention(
                       q.transpose(1, 2), torch::cat({kv, kt}, 1).transpose(1, 2),
                       torch::cat({vv, vt}, 1).transpose(1, 2))
                       .transpose(1, 2);
  const auto out = joint_attention(q, {kv, kt}, {vv, vt});
  EXPECT_EQ(out.sizes(), q.sizes());
  EXPECT_LT(max_diff(out, ref), 1e-6);
  EXPECT_LT(max_diff(joint_attention(q, {torch::cat({kv, kt}, 1)}, {torch::cat({vv, vt}, 1)}), ref),
            1e-6);
  EXPECT_THROW((void)joint_attention(q, {kv, kt}, {vv}), std::invalid_argument);
}

TEST(MaskedRowsAttention, MasksTheKeysAndZeroesTheMaskedRows) {
  torch::manual_seed(11);
  const auto q = torch::randn({2, 5, 3, 8});
  const auto k = torch::randn({2, 4, 3, 8});
  const auto v = torch::randn({2, 4, 3, 8});
  const auto keys = torch::tensor({1, 1, 0, 1, 1, 0, 0, 1}, torch::kBool).view({2, 4});
  const auto rows = torch::tensor({1, 1, 1, 0, 1, 0, 1, 1, 1, 1}, torch::kBool).view({2, 5});
  const auto out = masked_rows_attention(q, k, v, keys, rows);
  ASSERT_EQ(out.sizes(), q.sizes());
  const auto full =
      omnidp::models::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                   v.transpose(1, 2), keys.view({2, 1, 1, 4}))
          .transpose(1, 2);
  EXPECT_TRUE(torch::equal(out, full * rows.view({2, 5, 1, 1}).to(torch::kFloat32)));
  EXPECT_TRUE(torch::equal(out[0][3], torch::zeros({3, 8})));
  EXPECT_TRUE(torch::equal(out[1][0], torch::zeros({3, 8})));
}

TEST(AttentionKeyPadding, NoneOnTheCpu) {
  set_attention_backend(AttentionBackend::cudnn);
  EXPECT_EQ(attention_key_padding(torch::randn({1, 4, 2, 128}).to(torch::kBFloat16), 49546, 0), 0);
  set_attention_backend(AttentionBackend::automatic);
}

// GPU builds: cuDNN's output and log-sum-exp with the correction kernel, against the attention
// over the real keys (bf16) and the explicit softmax in float64 on the CPU.
TEST(AttentionPaddedKeysGpu, CudnnAndTheCorrectionKernelMatchTheRealKeys) {
  if (cuda_kernels() == nullptr || !torch::cuda::is_available()) {
    GTEST_SKIP() << "no fused CUDA kernels in this build or no CUDA device";
  }
  torch::manual_seed(6);
  const auto cuda = torch::Device(torch::kCUDA);
  const auto bf = torch::kBFloat16;
  // [B, S, H, D]: 4650 video keys and 350 text keys, 120 padding rows to 5120.
  const auto q = torch::randn({1, 4650, 4, 128}).to(cuda, bf);
  const std::vector<torch::Tensor> k{torch::randn({1, 4650, 4, 128}).to(cuda, bf) * 2.0,
                                     torch::randn({1, 350, 4, 128}).to(cuda, bf)};
  const std::vector<torch::Tensor> v{torch::randn({1, 4650, 4, 128}).to(cuda, bf),
                                     torch::randn({1, 350, 4, 128}).to(cuda, bf)};
  set_attention_backend(AttentionBackend::cudnn);
  ASSERT_EQ(attention_key_padding(q, 5000, kMinPaddedKeys), 120);
  const auto out = joint_attention(q, k, v);
  set_attention_key_padding(false);
  EXPECT_EQ(attention_key_padding(q, 5000, kMinPaddedKeys), 0);
  const auto unpadded = joint_attention(q, k, v);
  set_attention_key_padding(true);
  set_attention_backend(AttentionBackend::flash);
  EXPECT_EQ(attention_key_padding(q, 5000, kMinPaddedKeys), 0);
  set_attention_backend(AttentionBackend::automatic);
  const auto f64 = torch::kFloat64;
  const auto exact =
      omnidp::models::scaled_dot_product_attention(q.cpu().to(f64).transpose(1, 2),
                                                   torch::cat(k, 1).cpu().to(f64).transpose(1, 2),
                                                   torch::cat(v, 1).cpu().to(f64).transpose(1, 2))
          .transpose(1, 2);
  const double padded_error = max_diff(out.cpu(), exact);
  const double unpadded_error = max_diff(unpadded.cpu(), exact);
  std::cout << "largest difference from float64: padded " << padded_error << ", unpadded "
            << unpadded_error << "\n";
  EXPECT_LT(padded_error, 2.0 * unpadded_error + 1e-3);
  EXPECT_LT(padded_error, 2e-2);
}
}  // namespace
}  // namespace omnidp::models

// The self- and cross-attention of the DiT layout (Wan's attn1 and attn2): the deferred
// biases against the eager projections, the fused projections' shared storage, the image
// tokens' added keys and values.
#include "omnidp/models/layers/dit_attention.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "models/fused_switch.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

// With the fused kernels the projections defer their biases to the next kernel
// (SelfAttention::defers_biases): the value bias is folded into the output bias, the rest are
// added where the tensor is read next. The eager path adds each in its projection.
TEST(DitAttention, DeferredBiasesGiveTheForwardResult) {
  torch::manual_seed(21);
  torch::NoGradGuard no_grad;
  const std::int64_t dim = 32, heads = 2, tokens = 6;
  SelfAttention self_attn(dim, heads, 1e-6, TensorShard{}, ParamSpec{}, "m");
  CrossAttention cross_attn(dim, heads, 1e-6, TensorShard{}, ParamSpec{}, "m");
  for (auto& p : self_attn->parameters()) p.copy_(torch::randn_like(p) * 0.3);
  for (auto& p : cross_attn->parameters()) p.copy_(torch::randn_like(p) * 0.3);
  const auto x = torch::randn({2, tokens, dim});
  const auto ctx = torch::randn({2, 4, dim});
  const auto angles = torch::randn({tokens, 1, dim / heads / 2});
  const auto freqs = torch::polar(torch::ones_like(angles), angles);
  torch::Tensor self_ref, cross_ref;
  {
    const testing::FusedSwitch eager(false);
    const auto [self_whole, self_none] = self_attn->forward(x, freqs);
    const auto [cross_whole, cross_none] = cross_attn->attend(x, cross_attn->context_kv(ctx));
    EXPECT_FALSE(self_attn->defers_biases());
    EXPECT_FALSE(self_none.defined());
    EXPECT_FALSE(cross_none.defined());
    self_ref = self_whole;
    cross_ref = cross_whole;
  }
  ASSERT_TRUE(self_attn->defers_biases());
  // q, k and v are one weight (self), k and v (cross); to_q reads x there.
  EXPECT_TRUE(self_attn->to_q->weight.is_alias_of(self_attn->to_v->weight));
  EXPECT_TRUE(cross_attn->to_k->weight.is_alias_of(cross_attn->to_v->weight));
  EXPECT_FALSE(cross_attn->to_q->weight.is_alias_of(cross_attn->to_k->weight));
  const auto& out = self_attn->to_out[0]->as<RowParallelLinear>();
  const auto folded = self_attn->folded_out_bias();
  EXPECT_LT(
      (folded - (out->bias + torch::mv(out->weight, self_attn->to_v->bias))).abs().max().item<double>(),
      1e-6);
  EXPECT_THROW((void)self_attn->forward(x, freqs), ModelError);  // no folded bias given
  const auto [value, bias] = self_attn->forward(x, freqs, folded);
  EXPECT_TRUE(bias.is_same(folded));
  EXPECT_LT((value + bias - self_ref).abs().max().item<double>(), 1e-5);
  const auto [cross_value, cross_bias] = cross_attn->attend(x, cross_attn->context_kv(ctx));
  EXPECT_TRUE(cross_bias.is_same(cross_attn->to_out[0]->as<RowParallelLinear>()->bias));
  EXPECT_LT((cross_value + cross_bias - cross_ref).abs().max().item<double>(), 1e-5);

  const testing::FusedSwitch eager_path(false);  // every bias in its projection
  const auto [eager, no_bias] = self_attn->forward(x, freqs, folded);
  EXPECT_FALSE(no_bias.defined());
  EXPECT_LT((eager - self_ref).abs().max().item<double>(), 1e-5);
}

// The image's keys and values: the same normalised queries attend to the text and to the image,
// and the two are summed before to_out, with the deferred biases as without.
TEST(DitAttention, AddedKeysAndValuesAddTheImageAttention) {
  torch::manual_seed(22);
  torch::NoGradGuard no_grad;
  const std::int64_t dim = 32, heads = 2;
  CrossAttention cross(dim, heads, 1e-6, TensorShard{}, ParamSpec{}, "m", dim);
  for (auto& p : cross->parameters()) p.copy_(torch::randn_like(p) * 0.3);
  const auto x = torch::randn({2, 6, dim});
  const auto text = cross->context_kv(torch::randn({2, 4, dim}));
  const auto image = cross->image_kv(torch::randn({2, 3, dim}));
  torch::Tensor want;
  {
    const testing::FusedSwitch eager(false);
    const auto q = cross->norm_q->forward(cross->to_q->forward(x), {}, dim / heads)
                       .unflatten(2, {heads, -1})
                       .transpose(1, 2);
    const auto attend = [&](const KeyValues& kv) {
      return torch::softmax(torch::matmul(q, kv.first.transpose(1, 2).transpose(2, 3)) /
                                std::sqrt(static_cast<double>(dim / heads)),
                            -1)
          .matmul(kv.second.transpose(1, 2))
          .transpose(1, 2)
          .flatten(2);
    };
    const auto& out = cross->to_out[0]->as<RowParallelLinear>();
    want = torch::nn::functional::linear(attend(text) + attend(image), out->weight, out->bias);
    EXPECT_LT((cross->attend(x, text, image).first - want).abs().max().item<double>(), 1e-5);
  }
  const auto [value, bias] = cross->attend(x, text, image);
  EXPECT_LT((value + bias - want).abs().max().item<double>(), 1e-5);
  const auto [text_only, text_bias] = cross->attend(x, text);
  EXPECT_GT((text_only + text_bias - want).abs().max().item<double>(), 1e-3);
  CrossAttention plain(dim, heads, 1e-6, TensorShard{}, ParamSpec{}, "m");
  EXPECT_THROW((void)plain->image_kv(torch::randn({2, 3, dim})), ModelError);
}

}  // namespace
}  // namespace omnidp::models

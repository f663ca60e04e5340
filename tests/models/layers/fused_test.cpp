#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/rope.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "models/fused_switch.hpp"
#include "omnidp/models/layers/cuda_kernels.hpp"

namespace omnidp::models {
namespace {

using testing::FusedSwitch;

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().max().item<double>();
}

// [B, G, 6, 1, D] like a Wan block's modulation; select(2, i) gives strided [B, G, 1, D] rows.
torch::Tensor modulation(std::int64_t b, std::int64_t g, std::int64_t d) {
  return torch::randn({b, g, 6, 1, d});
}

TEST(FusedSwitch, TogglesAndDefaultsOn) {
  EXPECT_TRUE(fused_elementwise());
  {
    const FusedSwitch off(false);
    EXPECT_FALSE(fused_elementwise());
  }
  EXPECT_TRUE(fused_elementwise());
}

TEST(AddcmulAs, IsSelfPlusProductRoundedOnce) {
  torch::manual_seed(3);
  const auto x = torch::randn({2, 3, 4, 8}).to(torch::kBFloat16);
  const auto y = torch::randn({2, 3, 4, 8}).to(torch::kBFloat16);
  const auto gate = torch::randn({2, 3, 1, 8});
  const auto ref = (x.to(torch::kFloat32) + y.to(torch::kFloat32) * gate).to(torch::kBFloat16);
  const auto out = addcmul_as(x, y, gate, torch::kBFloat16);
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(out.sizes(), x.sizes());
  EXPECT_LE(max_diff(out, ref), 1e-2 * ref.abs().max().item<double>());
  const auto f = addcmul_as(x.to(torch::kFloat32), y.to(torch::kFloat32), gate, torch::kFloat32);
  EXPECT_LT(max_diff(f, x.to(torch::kFloat32) + y.to(torch::kFloat32) * gate), 1e-6);
}

TEST(RmsNorm, IsTorchNnRmsNormOnBothPaths) {
  torch::manual_seed(4);
  const auto x = torch::randn({2, 5, 16});
  const auto w = torch::randn({16});
  const auto ref = x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * w;
  EXPECT_LT(max_diff(rms_norm(x, w, 1e-6), ref), 1e-5);
  const FusedSwitch off(false);
  EXPECT_LT(max_diff(rms_norm(x, w, 1e-6), ref), 1e-5);
  EXPECT_LT(
      max_diff(rms_norm(x, torch::Tensor(), 1e-6), x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6)),
      1e-5);
}

TEST(ModulatedLayerNorm, IsShiftPlusNormTimesScalePerGroup) {
  torch::manual_seed(5);
  const auto x = torch::randn({2, 3, 4, 8});
  const auto mod = modulation(2, 3, 8);
  const auto shift = mod.select(2, 0);
  const auto scale1p = mod.select(2, 1) + 1.0;
  const auto ref = shift + torch::layer_norm(x, {8}, {}, {}, 1e-6) * scale1p;
  EXPECT_LT(max_diff(modulated_layer_norm(x, shift, scale1p, 1e-6, torch::kFloat32), ref), 1e-5);
  const FusedSwitch off(false);
  EXPECT_LT(max_diff(modulated_layer_norm(x, shift, scale1p, 1e-6, torch::kFloat32), ref), 1e-5);
}

TEST(Fp32AffineLayerNorm, IsTheFloat32LayerNormRoundedOnce) {
  torch::manual_seed(10);
  const auto x = torch::randn({2, 5, 16}).to(torch::kBFloat16);
  const auto w = torch::randn({16});
  const auto b = torch::randn({16});
  const auto ref = torch::layer_norm(x.to(torch::kFloat32), {16}, w, b, 1e-6).to(torch::kBFloat16);
  const auto out = fp32_affine_layer_norm(x, w, b, 1e-6);
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(out, ref));
}

TEST(LinearGeluTanh, IsGeluOfTheLinearOnBothPaths) {
  torch::manual_seed(11);
  const auto x = torch::randn({2, 3, 8});
  const auto w = torch::randn({5, 8});
  const auto b = torch::randn({5});
  const auto lin = torch::matmul(x, w.t()) + b;
  const auto ref =
      0.5 * lin * (1 + torch::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (lin + 0.044715 * lin.pow(3))));
  const auto out = linear_gelu_tanh(x, w, b);
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 3, 5}));
  EXPECT_LT(max_diff(out, ref), 1e-5);
  const FusedSwitch off(false);
  EXPECT_LT(max_diff(linear_gelu_tanh(x, w, b), ref), 1e-5);
}

TEST(LinearBias, IsTheLinearOfTheLastDimension) {
  torch::manual_seed(12);
  const auto x = torch::randn({2, 3, 8});
  const auto w = torch::randn({5, 8});
  const auto b = torch::randn({5});
  const auto out = linear_bias(x, w, b);
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 3, 5}));
  EXPECT_LT(max_diff(out, torch::matmul(x, w.t()) + b), 1e-5);
  EXPECT_LT(max_diff(linear_bias(x, w, torch::Tensor()), torch::matmul(x, w.t())), 1e-5);
}

TEST(GatedResidual, IsXPlusYTimesGatePerGroup) {
  torch::manual_seed(6);
  const auto x = torch::randn({1, 2, 3, 8});
  const auto y = torch::randn({1, 2, 3, 8});
  const auto gate = modulation(1, 2, 8).select(2, 2);
  EXPECT_LT(max_diff(gated_residual(x, y, gate, torch::kFloat32), x + y * gate), 1e-6);
}

TEST(GatedResidual, AddsADeferredBiasAndTakesAMissingGateAsOne) {
  torch::manual_seed(16);
  const auto x = torch::randn({2, 3, 4, 8});
  const auto y = torch::randn({2, 3, 4, 8});
  const auto b = torch::randn({8});
  const auto gate = modulation(2, 3, 8).select(2, 2);
  EXPECT_LT(max_diff(gated_residual(x, y, gate, torch::kFloat32, b), x + (y + b) * gate), 1e-6);
  EXPECT_LT(max_diff(gated_residual(x, y, torch::Tensor(), torch::kFloat32, b), x + y + b), 1e-6);
  EXPECT_LT(max_diff(gated_residual(x, y, torch::Tensor(), torch::kFloat32), x + y), 1e-6);
  // bf16: y + bias is rounded before the residual, as a GEMM's bias epilogue rounds.
  const auto bf = torch::kBFloat16;
  const auto yb = (y.to(bf) + b.to(bf)).to(torch::kFloat32);
  const auto expect = (x.to(bf).to(torch::kFloat32) + yb * gate).to(bf);
  EXPECT_TRUE(torch::equal(gated_residual(x.to(bf), y.to(bf), gate, bf, b.to(bf)), expect));
}

TEST(RmsNormRope, OnAColumnSliceEqualsNormThenRotatePerHead) {
  torch::manual_seed(7);
  const std::int64_t batch = 2, tokens = 5, heads = 3, head_dim = 8, dim = heads * head_dim;
  const auto qkv = torch::randn({batch, tokens, 3 * dim});
  const auto k = qkv.narrow(2, dim, dim);  // a strided slice, as a fused projection gives
  const auto w = torch::randn({dim});
  const auto angles = torch::randn({tokens, 1, head_dim / 2});
  const auto freqs = torch::polar(torch::ones_like(angles), angles);
  const auto normed = k * torch::rsqrt(k.pow(2).mean(-1, true) + 1e-6) * w;
  const auto ref = apply_rope(normed.unflatten(-1, {heads, head_dim}), freqs).flatten(-2);
  const auto out = rms_norm_rope(k, w, 1e-6, freqs, head_dim);
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_LT(max_diff(out, ref), 1e-5);
  EXPECT_LT(max_diff(rms_norm_rope(k, w, 1e-6, torch::Tensor(), head_dim), normed), 1e-5);
}

TEST(RmsNormRope, AddsADeferredBiasBeforeTheNorm) {
  torch::manual_seed(17);
  const std::int64_t tokens = 5, head_dim = 8, dim = 3 * head_dim;
  const auto qkv = torch::randn({2, tokens, 3 * dim});
  const auto q = qkv.narrow(2, 0, dim);
  const auto w = torch::randn({dim});
  const auto b = torch::randn({dim});
  const auto angles = torch::randn({tokens, 1, head_dim / 2});
  const auto freqs = torch::polar(torch::ones_like(angles), angles);
  EXPECT_LT(max_diff(rms_norm_rope(q, w, 1e-6, freqs, head_dim, b),
                     rms_norm_rope(q + b, w, 1e-6, freqs, head_dim)),
            1e-6);
  EXPECT_LT(
      max_diff(rms_norm_rope(q, w, 1e-6, torch::Tensor(), head_dim, b), rms_norm(q + b, w, 1e-6)),
      1e-6);
}

// The Wan VAE's RMS_norm: F.normalize over the channels, times sqrt(C) and gamma.
TEST(ChannelRmsNorm, IsTheWanVaeExpressionWithBiasAndSilu) {
  torch::manual_seed(18);
  namespace F = torch::nn::functional;
  const std::int64_t c = 16;
  const auto x = torch::randn({2, c, 3, 4, 5});
  const auto gamma = torch::randn({c, 1, 1, 1});
  const auto b = torch::randn({c});
  const double scale = std::sqrt(static_cast<double>(c));
  const auto xb = x + b.view({1, c, 1, 1, 1});
  const auto ref =
      F::normalize(xb, F::NormalizeFuncOptions().p(2.0).dim(1).eps(1e-12)) * scale * gamma;
  EXPECT_LT(max_diff(channel_rms_norm(x, gamma, scale, false, b), ref), 1e-5);
  EXPECT_LT(max_diff(channel_rms_norm(x, gamma, scale, true, b), torch::silu(ref)), 1e-5);
  EXPECT_LT(max_diff(channel_rms_norm(xb, gamma, scale, true), torch::silu(ref)), 1e-5);
  // bf16: the norm in float32, scale/norm rounded once, then the bf16 products.
  const auto bf = torch::kBFloat16;
  const auto xh = x.to(bf);
  const auto norm = xh.to(torch::kFloat32).pow(2).sum(1, true).sqrt();
  const auto expect = torch::silu(xh * (scale / norm).to(bf) * gamma.to(bf));
  const auto out = channel_rms_norm(xh, gamma.to(bf), scale, true);
  EXPECT_EQ(out.scalar_type(), bf);
  EXPECT_LT(max_diff(out, expect), 1.6e-2 * std::max(1.0, expect.abs().max().item<double>()));
  // Channels-last input: the same values.
  const auto cl = xh.contiguous(torch::MemoryFormat::ChannelsLast3d);
  EXPECT_TRUE(torch::equal(channel_rms_norm(cl, gamma.to(bf), scale, true), out));
  EXPECT_THROW((void)channel_rms_norm(torch::randn({4}), gamma, scale, false), std::invalid_argument);
}

// The CUDA kernels against the libtorch path (CPU) on the same bf16 inputs, for rows of
// heads x head_dim elements.
void expect_kernels_agree(std::int64_t heads, std::int64_t head_dim) {
  SCOPED_TRACE("heads " + std::to_string(heads) + " x head_dim " + std::to_string(head_dim));
  const auto cuda = torch::Device(torch::kCUDA);
  const auto bf = torch::kBFloat16;
  const std::int64_t batch = 2, groups = 3, per_group = 16, dim = heads * head_dim;
  const auto x = torch::randn({batch, groups, per_group, dim}).to(bf);
  const auto y = torch::randn({batch, groups, per_group, dim}).to(bf);
  const auto mod = modulation(batch, groups, dim);
  const auto shift = mod.select(2, 0);          // strided rows
  const auto scale1p = mod.select(2, 1) + 1.0;  // contiguous rows: another group stride
  const auto gate = mod.select(2, 2);
  const auto tol = [](const torch::Tensor& ref) {
    return 2e-2 * std::max(1.0, ref.abs().max().item<double>());
  };
  {
    const auto ref = modulated_layer_norm(x, shift, scale1p, 1e-6, bf);
    const auto out =
        modulated_layer_norm(x.to(cuda), shift.to(cuda), scale1p.to(cuda), 1e-6, bf).cpu();
    EXPECT_LE(max_diff(out, ref), tol(ref));
  }
  {
    const auto ref = gated_residual(x, y, gate, bf);
    const auto out = gated_residual(x.to(cuda), y.to(cuda), gate.to(cuda), bf).cpu();
    EXPECT_LE(max_diff(out, ref), tol(ref));
    const auto b = torch::randn({dim}).to(bf);
    const auto ref_bias = gated_residual(x, y, gate, bf, b);
    const auto out_bias = gated_residual(x.to(cuda), y.to(cuda), gate.to(cuda), bf, b.to(cuda)).cpu();
    EXPECT_LE(max_diff(out_bias, ref_bias), tol(ref_bias));
    const auto ref_add = gated_residual(x, y, torch::Tensor(), bf, b);
    const auto out_add =
        gated_residual(x.to(cuda), y.to(cuda), torch::Tensor(), bf, b.to(cuda)).cpu();
    EXPECT_LE(max_diff(out_add, ref_add), tol(ref_add));
  }
  {
    // The VAE's channels-last rows: dim channels at every position.
    const auto v =
        torch::randn({1, dim, 3, 5, 7}).to(bf).contiguous(torch::MemoryFormat::ChannelsLast3d);
    const auto g = torch::randn({dim, 1, 1, 1}).to(bf);
    const auto b = torch::randn({dim}).to(bf);
    const double scale = std::sqrt(static_cast<double>(dim));
    for (const bool silu : {false, true}) {
      const auto ref = channel_rms_norm(v, g, scale, silu, b);
      const auto out = channel_rms_norm(v.to(cuda), g.to(cuda), scale, silu, b.to(cuda));
      EXPECT_TRUE(out.is_contiguous(torch::MemoryFormat::ChannelsLast3d));
      EXPECT_LE(max_diff(out.cpu(), ref), tol(ref));
    }
  }
  {
    const auto w = torch::randn({dim});
    const auto b = torch::randn({dim});
    const auto flat = x.view({batch, -1, dim});
    const auto ref = fp32_affine_layer_norm(flat, w, b, 1e-6);
    const auto out = fp32_affine_layer_norm(flat.to(cuda), w.to(cuda), b.to(cuda), 1e-6).cpu();
    EXPECT_LE(max_diff(out, ref), tol(ref));
  }
  {
    const auto a = torch::randn({batch, 40, dim}).to(bf);
    const auto w = (torch::randn({3 * dim, dim}) / 16).to(bf);
    const auto b = torch::randn({3 * dim}).to(bf);
    const auto af = a.to(torch::kFloat32), wf = w.to(torch::kFloat32), bf32 = b.to(torch::kFloat32);
    const auto ref_gelu = linear_gelu_tanh(af, wf, bf32);
    const auto out_gelu = linear_gelu_tanh(a.to(cuda), w.to(cuda), b.to(cuda)).cpu();
    EXPECT_EQ(out_gelu.scalar_type(), bf);
    EXPECT_LE(max_diff(out_gelu, ref_gelu), tol(ref_gelu));
    const auto ref_linear = linear_bias(af, wf, bf32);
    const auto out_linear = linear_bias(a.to(cuda), w.to(cuda), b.to(cuda)).cpu();
    EXPECT_EQ(out_linear.sizes(), ref_linear.sizes());
    EXPECT_LE(max_diff(out_linear, ref_linear), tol(ref_linear));
  }
  {
    const std::int64_t tokens = groups * per_group;
    const auto qkv = torch::randn({batch, tokens, 3 * dim}).to(bf);
    const auto q = qkv.narrow(2, 0, dim);
    const auto w = torch::randn({dim}).to(bf);
    const auto angles = torch::randn({tokens, 1, head_dim / 2});
    const auto freqs = torch::polar(torch::ones_like(angles), angles);
    const auto ref = rms_norm_rope(q, w, 1e-6, freqs, head_dim);
    const auto out = rms_norm_rope(q.to(cuda), w.to(cuda), 1e-6, freqs.to(cuda), head_dim).cpu();
    EXPECT_LE(max_diff(out, ref), tol(ref));
    const auto b = torch::randn({dim}).to(bf);
    const auto ref_bias = rms_norm_rope(q, w, 1e-6, freqs, head_dim, b);
    const auto out_bias =
        rms_norm_rope(q.to(cuda), w.to(cuda), 1e-6, freqs.to(cuda), head_dim, b.to(cuda)).cpu();
    EXPECT_LE(max_diff(out_bias, ref_bias), tol(ref_bias));
  }
}

// GPU builds only: 4 x 64 takes the 16-byte vector kernels, 2 x 10 (rows not a multiple of 8)
// the bf16-pair kernels (and libtorch for the channel norm), 8 x 128 the channel norm's longest
// rows (1024 channels).
TEST(CudaKernels, AgreeWithTheLibtorchPathInBf16) {
  if (cuda_kernels() == nullptr || !torch::cuda::is_available()) {
    GTEST_SKIP() << "no fused CUDA kernels in this build or no CUDA device";
  }
  torch::manual_seed(8);
  expect_kernels_agree(4, 64);
  expect_kernels_agree(2, 10);
  expect_kernels_agree(8, 128);
}

}  // namespace
}  // namespace omnidp::models

// W8A8 FP8 linear layers: availability, the per-row quantization (kernel against libtorch), and
// the FP8 GEMM against the bf16 one (on a GPU with FP8 tensor cores; skipped elsewhere).
#include "omnidp/models/layers/fp8.hpp"

#include <gtest/gtest.h>
#include <torch/version.h>

#include "models/fused_switch.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/cuda_kernels.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"

namespace omnidp::models {
namespace {

TEST(Fp8, UnsupportedOnTheCpuWithTheReason) {
  const auto reason = fp8_unavailable_reason(torch::kCPU);
  if (TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 5)) {
    std::string want = "this build's libtorch ";  // appended: GCC 12 -Warray-bounds on a + chain
    want.append(TORCH_VERSION)
        .append(" has no row-wise FP8 GEMM (at::_scaled_mm needs libtorch 2.5 or later)");
    EXPECT_EQ(reason, want);
  } else {
    EXPECT_EQ(reason, "FP8 GEMMs need a CUDA device (got cpu)");
  }
  try {
    (void)quantize_fp8_weight(torch::ones({16, 16}));
    FAIL() << "no ModelError";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()), "model.quantization fp8: " + reason);
  }
  // A factory's check of the config: a ConfigError on the key, with the same reason.
  try {
    require_fp8_config(torch::kCPU);
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "model.quantization");
    EXPECT_EQ(e.message(), "fp8: " + reason);
  }
}

// Wan's FP8 leaves its biases to the fused kernels: with them off that is the reason, first.
TEST(Fp8, DeferredBiasesNeedTheFusedKernels) {
  {
    const testing::FusedSwitch off(false);
    const std::string want =
        "FP8 quantization needs the fused CUDA kernels (a bf16 model on a GPU with "
        "model.fused_kernels true)";
    EXPECT_EQ(fp8_unavailable_reason(torch::kCPU, Fp8Needs::deferred_biases), want);
    EXPECT_EQ(fp8_unavailable_reason(torch::kCUDA, Fp8Needs::deferred_biases), want);
    try {
      require_fp8(torch::kCPU, Fp8Needs::deferred_biases);
      FAIL() << "no ModelError";
    } catch (const ModelError& e) {
      EXPECT_EQ(std::string(e.what()), "model.quantization fp8: " + want);
    }
  }
  const testing::FusedSwitch on(true);
  EXPECT_EQ(fp8_unavailable_reason(torch::kCPU, Fp8Needs::deferred_biases),
            fp8_unavailable_reason(torch::kCPU));
}

TEST(Fp8, ALayersMethodQuantizesOnlyWhereSupported) {
  ColumnParallelLinear layer(16, 32, true, TensorShard{}, ParamSpec{}, "m");
  const auto reason = fp8_unavailable_reason(torch::kCPU);
  try {
    layer->set_fp8(Fp8Accumulation::fast);
    FAIL() << "no ModelError";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()), "model.quantization fp8: " + reason);
  }
  EXPECT_FALSE(layer->method().quantized());  // still the float GEMM
  const auto x = torch::randn({3, 16});
  EXPECT_TRUE(torch::equal(layer->forward(x), linear_bias(x, layer->weight, layer->bias)));
}

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
bool fp8_gpu() {
  return torch::cuda::is_available() && fp8_unavailable_reason(torch::kCUDA).empty();
}

TEST(Fp8Gpu, RowQuantizationKernelEqualsTheLibtorchExpression) {
  if (!fp8_gpu() || cuda_kernels() == nullptr) GTEST_SKIP() << "no FP8 GPU or no CUDA kernels";
  auto gen = torch::randn({300, 3072}, torch::kFloat32) * 3;
  gen[5].zero_();  // an all-zero row: scale 1e-12 / 448, values 0
  const auto x = gen.to(torch::kCUDA, torch::kBFloat16);
  const auto [q, scale] = quantize_fp8_rows(x);
  const auto f = x.to(torch::kFloat32);
  const auto ref_scale = f.abs().amax(1, true).clamp_min(1e-12) / 448.0;
  const auto ref_q =
      (f * (448.0 / f.abs().amax(1, true).clamp_min(1e-12))).clamp(-448, 448).to(at::kFloat8_e4m3fn);
  // The kernel divides by 448; libtorch's CUDA division by a scalar multiplies by its reciprocal:
  // the scales may differ in the last bit (2 ULP bound), the quantized values may not.
  EXPECT_TRUE(torch::allclose(scale, ref_scale, 2.4e-7, 0));
  EXPECT_TRUE(torch::equal(q.view(torch::kUInt8), ref_q.view(torch::kUInt8)));
}

TEST(Fp8Gpu, LinearIsWithinFp8ErrorOfTheBf16Gemm) {
  if (!fp8_gpu()) GTEST_SKIP() << "no FP8 GPU";
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto x = torch::randn({2, 100, 512}, opts).to(torch::kBFloat16);
  const auto w = (torch::randn({256, 512}, opts) / 22.6).to(torch::kBFloat16);
  const auto bias = torch::randn({256}, opts).to(torch::kBFloat16);
  const auto ref = torch::nn::functional::linear(x.to(torch::kFloat32), w.to(torch::kFloat32),
                                                 bias.to(torch::kFloat32));
  const auto out = fp8_linear(x, quantize_fp8_weight(w), bias);
  EXPECT_EQ(out.sizes(), ref.sizes());
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  // e4m3 keeps 3 mantissa bits: a relative RMS error of a few percent, never more than 6 %.
  const double rel =
      ((out.to(torch::kFloat32) - ref).pow(2).mean() / ref.pow(2).mean()).sqrt().item<double>();
  EXPECT_LT(rel, 0.06);
  EXPECT_GT(rel, 0.0);  // it did quantize

  // A layer's FP8 LinearMethod: forward() and the unbiased product are the FP8 GEMM.
  ColumnParallelLinear layer(512, 256, true, TensorShard{},
                             ParamSpec{torch::kBFloat16, torch::kCUDA}, "m");
  layer->weight.copy_(w);
  layer->bias.copy_(bias);
  layer->set_fp8(Fp8Accumulation::fast);
  ASSERT_TRUE(layer->method().quantized());
  EXPECT_TRUE(torch::equal(layer->forward(x), out));
  EXPECT_TRUE(torch::equal(layer->method().apply(x, layer->weight, {}),
                           fp8_linear(x, quantize_fp8_weight(w))));

  // Exact accumulation: the same quantized operands, float32-promoted sums; within the same
  // bound of the float32 product. set_fp8(nullopt) is the bf16 layer again.
  layer->set_fp8(Fp8Accumulation::exact);
  ASSERT_TRUE(layer->method().quantized());
  const auto exact = layer->forward(x).to(torch::kFloat32);
  EXPECT_LT(((exact - ref).pow(2).mean() / ref.pow(2).mean()).sqrt().item<double>(), 0.06);
  layer->set_fp8(std::nullopt);
  EXPECT_FALSE(layer->method().quantized());
  EXPECT_TRUE(torch::equal(layer->forward(x), linear_bias(x, w, bias)));
}

#endif  // libtorch with float8 types

}  // namespace
}  // namespace omnidp::models

// The shared model building blocks: RMSNorm (every style), the timestep embedding, the shape
// text and the factories' placement.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/placement.hpp"
#include "omnidp/models/layers/rms_norm.hpp"
#include "omnidp/models/layers/tensor_shape.hpp"
#include "omnidp/models/layers/timestep_embedding.hpp"

namespace omnidp::models {
namespace {

constexpr RmsNormStyle kStyles[] = {RmsNormStyle::torch_nn, RmsNormStyle::t5,
                                    RmsNormStyle::diffusers, RmsNormStyle::qwen2};

TEST(RMSNorm, EveryStyleIsXOverItsRmsTimesWeightInOneDtype) {
  for (const auto style : kStyles) {
    RMSNorm norm(2, 0.0, style);
    norm->weight.set_data(torch::tensor({2.0F, 1.0F}));
    const auto y = norm->forward(torch::tensor({{3.0F, 4.0F}}));  // rms = sqrt(12.5)
    const float r = std::sqrt(12.5F);
    EXPECT_TRUE(torch::allclose(y, torch::tensor({{6.0F / r, 4.0F / r}})))
        << static_cast<int>(style) << y;
    EXPECT_EQ(y.scalar_type(), torch::kFloat32);
  }
}

TEST(RMSNorm, TheStylesDifferInTheDtypeOfAMixedProduct) {
  const auto x16 = torch::tensor({{3.0F, 4.0F}}).to(torch::kBFloat16);
  const auto x32 = torch::tensor({{3.0F, 4.0F}});
  const auto dtype_of = [](RmsNormStyle style, const torch::Tensor& x, torch::ScalarType weight) {
    RMSNorm norm(2, 1e-6, style, torch::TensorOptions().dtype(weight));
    return norm->forward(x).scalar_type();
  };
  // bf16 x, float32 weight: Diffusers rounds the result back to x's dtype, the others promote.
  EXPECT_EQ(dtype_of(RmsNormStyle::torch_nn, x16, torch::kFloat32), torch::kFloat32);
  EXPECT_EQ(dtype_of(RmsNormStyle::t5, x16, torch::kFloat32), torch::kFloat32);
  EXPECT_EQ(dtype_of(RmsNormStyle::diffusers, x16, torch::kFloat32), torch::kBFloat16);
  EXPECT_EQ(dtype_of(RmsNormStyle::qwen2, x16, torch::kFloat32), torch::kFloat32);
  // float32 x, bf16 weight: T5 rounds to the weight's dtype first.
  EXPECT_EQ(dtype_of(RmsNormStyle::torch_nn, x32, torch::kBFloat16), torch::kFloat32);
  EXPECT_EQ(dtype_of(RmsNormStyle::t5, x32, torch::kBFloat16), torch::kBFloat16);
  EXPECT_EQ(dtype_of(RmsNormStyle::diffusers, x32, torch::kBFloat16), torch::kFloat32);
  EXPECT_EQ(dtype_of(RmsNormStyle::qwen2, x32, torch::kBFloat16), torch::kFloat32);
}

TEST(RMSNorm, HasOneFrozenWeightOfOnesInTheRequestedDtype) {
  RMSNorm norm(3, 1e-5, RmsNormStyle::qwen2, ParamSpec{torch::kBFloat16, torch::kCPU}.options());
  const auto params = norm->named_parameters();
  ASSERT_EQ(params.size(), 1U);
  EXPECT_EQ(params[0].key(), "weight");
  EXPECT_EQ(norm->weight.scalar_type(), torch::kBFloat16);
  EXPECT_FALSE(norm->weight.requires_grad());
  EXPECT_TRUE(torch::equal(norm->weight, torch::ones({3}, torch::kBFloat16)));
  EXPECT_DOUBLE_EQ(norm->eps(), 1e-5);
}

TEST(TimestepSinusoid, IsCosThenSin) {
  const auto e = timestep_sinusoid(torch::tensor({3.0F}), 4);
  ASSERT_EQ(e.sizes(), (std::vector<std::int64_t>{1, 4}));
  EXPECT_NEAR(e[0][0].item<double>(), std::cos(3.0), 1e-6);
  EXPECT_NEAR(e[0][1].item<double>(), std::cos(3.0 * 0.01), 1e-6);
  EXPECT_NEAR(e[0][2].item<double>(), std::sin(3.0), 1e-6);
  EXPECT_NEAR(e[0][3].item<double>(), std::sin(3.0 * 0.01), 1e-6);
}

TEST(TimestepSinusoid, MatchesTheFormulaAt256) {
  const auto t = torch::tensor({0.0F, 500.0F, 999.0F});
  const auto emb = timestep_sinusoid(t, 256);
  ASSERT_EQ(emb.sizes(), (std::vector<std::int64_t>{3, 256}));
  for (int row = 0; row < 3; ++row) {
    const double tv = t[row].item<double>();
    for (int j : {0, 1, 17, 64, 127}) {
      const double freq = std::exp(-std::log(10000.0) * j / 128.0);
      EXPECT_NEAR(emb[row][j].item<double>(), std::cos(tv * freq), 2e-4) << row << "," << j;
      EXPECT_NEAR(emb[row][128 + j].item<double>(), std::sin(tv * freq), 2e-4) << row << "," << j;
    }
  }
}

TEST(TimestepSinusoid, FlattensItsInputAndPadsAnOddDim) {
  const auto t = torch::tensor({{1.0F, 2.0F}, {3.0F, 4.0F}});
  const auto e = timestep_sinusoid(t, 5);
  ASSERT_EQ(e.sizes(), (std::vector<std::int64_t>{4, 5}));
  EXPECT_TRUE(torch::equal(e.select(1, 4), torch::zeros({4})));
  EXPECT_TRUE(torch::equal(e.slice(1, 0, 4), timestep_sinusoid(t.flatten(), 4)));
  EXPECT_EQ(timestep_sinusoid(torch::tensor({7}, torch::kLong), 4).scalar_type(), torch::kFloat32);
}

TEST(EmbeddingMlp, IsTwoLinearLayersAroundItsActivation) {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 6});
  for (const auto act : {EmbeddingActivation::silu, EmbeddingActivation::gelu_tanh}) {
    EmbeddingMlp mlp(6, 4, act);
    for (auto& p : mlp->parameters()) p.copy_(torch::randn(p.sizes()));
    const auto h = torch::nn::functional::linear(x, mlp->linear_1->weight, mlp->linear_1->bias);
    const auto a = act == EmbeddingActivation::silu ? torch::silu(h) : torch::gelu(h, "tanh");
    const auto want = torch::nn::functional::linear(a, mlp->linear_2->weight, mlp->linear_2->bias);
    EXPECT_TRUE(torch::allclose(mlp->forward(x), want, 1e-6, 1e-6));
  }
  // Diffusers' names: linear_1 [out, in], linear_2 [out, out].
  const EmbeddingMlp mlp(6, 4, EmbeddingActivation::silu, ParamSpec{torch::kBFloat16, torch::kCPU});
  std::vector<std::string> names;
  for (const auto& p : mlp->named_parameters()) {
    names.push_back(p.key() + " " + c10::str(p.value().sizes()) + " " +
                    c10::toString(p.value().scalar_type()));
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "linear_1.weight [4, 6] BFloat16", "linear_1.bias [4] BFloat16",
                       "linear_2.weight [4, 4] BFloat16", "linear_2.bias [4] BFloat16"}));
}

TEST(ShapeString, WritesTheDimensionsInBrackets) {
  EXPECT_EQ(shape_string(torch::zeros({2, 1, 3}).sizes()), "[2, 1, 3]");
  EXPECT_EQ(shape_string(torch::zeros({2, 1}).sizes(), ","), "[2,1]");
  EXPECT_EQ(shape_string(torch::tensor(1.0F).sizes()), "[]");
  EXPECT_EQ(shape_string(std::vector<std::int64_t>{4, 6}), "[4, 6]");
}

TEST(Placement, MapsTheConfigDtype) {
  EXPECT_EQ(to_scalar_type(DType::fp32), torch::kFloat32);
  EXPECT_EQ(to_scalar_type(DType::bf16), torch::kBFloat16);
  EXPECT_EQ(to_scalar_type(DType::fp16), torch::kFloat16);
}

TEST(Placement, ACudaBindingWithoutCudaIsAConfigErrorOnModelDevice) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA";
  DeviceBinding binding;
  binding.kind = DeviceKind::cuda;
  try {
    (void)model_placement(Config{}, binding);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("model.device"), 0U) << e.what();
    EXPECT_NE(
        std::string(e.what()).find("cuda requested but this libtorch/machine has no CUDA device"),
        std::string::npos)
        << e.what();
  }
}

TEST(Freeze, TurnsGradientsOff) {
  torch::nn::Linear lin(2, 2);
  freeze(*lin);
  for (const auto& p : lin->parameters()) EXPECT_FALSE(p.requires_grad());
}

}  // namespace
}  // namespace omnidp::models

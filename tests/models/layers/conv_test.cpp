// conv3d_fp32_accum / conv2d_fp32_accum: a CPU bf16 convolution is the float32 convolution of
// the bf16 inputs rounded once, with or without oneDNN (libtorch's bf16 path on CPUs without
// AVX-512; at::Context::setUserEnabledMkldnn(false) takes that path on any CPU).
#include "omnidp/models/layers/conv.hpp"

#include <gtest/gtest.h>

#include <ATen/Context.h>

namespace omnidp::models {
namespace {

// Restores libtorch's oneDNN switch.
class OneDnnSwitch {
 public:
  explicit OneDnnSwitch(bool on) : before_(at::globalContext().userEnabledMkldnn()) {
    at::globalContext().setUserEnabledMkldnn(on);
  }
  ~OneDnnSwitch() { at::globalContext().setUserEnabledMkldnn(before_); }
  OneDnnSwitch(const OneDnnSwitch&) = delete;
  OneDnnSwitch& operator=(const OneDnnSwitch&) = delete;

 private:
  bool before_;
};

TEST(Conv, Bf16OnTheCpuIsTheRoundedFloat32ConvolutionOnEveryPath) {
  torch::manual_seed(3);
  const auto x = torch::randn({1, 16, 3, 8, 8}).to(torch::kBFloat16);
  const auto w = (torch::randn({8, 16, 3, 3, 3}) * 0.1).to(torch::kBFloat16);
  const auto b = torch::randn({8}).to(torch::kBFloat16);
  const auto expected = torch::conv3d(x.to(torch::kFloat32), w.to(torch::kFloat32),
                                      b.to(torch::kFloat32), {1, 1, 1}, {1, 1, 1})
                            .to(torch::kBFloat16);
  for (const bool onednn : {true, false}) {
    const OneDnnSwitch guard(onednn);
    const auto y = conv3d_fp32_accum(x, w, b, {1, 1, 1}, {1, 1, 1});
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(y, expected)) << "oneDNN " << onednn;
    const auto y2 =
        conv2d_fp32_accum(x.select(2, 0), w.select(2, 1), torch::Tensor(), {1, 1}, {1, 1});
    const auto e2 = torch::conv2d(x.select(2, 0).to(torch::kFloat32),
                                  w.select(2, 1).to(torch::kFloat32), {}, {1, 1}, {1, 1})
                        .to(torch::kBFloat16);
    EXPECT_TRUE(torch::equal(y2, e2)) << "oneDNN " << onednn;
  }
}

TEST(Conv, Float32IsLibtorchsConvolution) {
  torch::manual_seed(4);
  const auto x = torch::randn({1, 4, 2, 5, 5});
  const auto w = torch::randn({2, 4, 1, 3, 3});
  EXPECT_TRUE(torch::equal(conv3d_fp32_accum(x, w, torch::Tensor(), {1, 2, 2}, {0, 1, 1}),
                           torch::conv3d(x, w, {}, {1, 2, 2}, {0, 1, 1})));
}

}  // namespace
}  // namespace omnidp::models

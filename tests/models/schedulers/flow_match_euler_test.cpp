#include "omnidp/models/schedulers/flow_match_euler.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models {
namespace {

const std::filesystem::path kIo = omnidp::test::fixture("diffusers-ref/schedulers/io.safetensors");

TEST(NumpyLinspace, MatchesNumpyValues) {
  // numpy.linspace(1, 0, 5) and (1, 1/1000, 4), written out.
  EXPECT_EQ(numpy_linspace(1.0, 0.0, 5), (std::vector<double>{1.0, 0.75, 0.5, 0.25, 0.0}));
  const auto v = numpy_linspace(1.0, 0.001, 4);
  EXPECT_EQ(v.front(), 1.0);
  EXPECT_EQ(v[1], 1.0 + 1.0 * ((0.001 - 1.0) / 3));
  EXPECT_EQ(v.back(), 0.001);
  EXPECT_EQ(numpy_linspace(2.0, 3.0, 1), (std::vector<double>{2.0}));
  EXPECT_TRUE(numpy_linspace(0.0, 1.0, 0).empty());
}

TEST(FlowMatchEuler, MatchesFixtureScheduleExactly) {
  OMNIDP_REQUIRE_FIXTURES();
  const SafetensorsFile io(kIo);
  for (const int n : {4, 30, 50}) {
    FlowMatchEulerScheduler s(FlowMatchEulerOptions{5.0, 1000});
    s.set_timesteps(n);
    const auto prefix = "euler_shift5_n" + std::to_string(n) + "_";
    EXPECT_TRUE(torch::equal(s.sigmas(), io.tensor(prefix + "sigmas"))) << n;
    EXPECT_TRUE(torch::equal(s.timesteps(), io.tensor(prefix + "timesteps"))) << n;
    EXPECT_EQ(s.num_steps(), n);
    EXPECT_EQ(s.sigmas()[n].item<float>(), 0.0F);
  }
}

TEST(FlowMatchEuler, StepIsEulerOnTheShiftedSigmas) {
  FlowMatchEulerScheduler s;
  s.set_timesteps(3);
  auto x = torch::full({2, 2}, 1.0F);
  const auto v = torch::full({2, 2}, 0.5F);
  const auto sig = s.sigmas();
  for (int i = 0; i < 3; ++i) {
    const auto expected = x + (sig[i + 1] - sig[i]) * v;
    x = s.step(v, i, x);
    EXPECT_TRUE(torch::equal(x, expected)) << i;
  }
  // x_end = x_0 - sigma_0 * v for a constant velocity.
  EXPECT_NEAR(x[0][0].item<float>(), 1.0F - 0.5F * sig[0].item<float>(), 1e-6F);
}

TEST(FlowMatchEuler, StepsOutOfOrderAreErrors) {
  FlowMatchEulerScheduler s;
  const auto x = torch::zeros({1});
  EXPECT_THROW((void)s.step(x, 0, x), ModelError);
  s.set_timesteps(2);
  EXPECT_THROW((void)s.step(x, 1, x), ModelError);
  (void)s.step(x, 0, x);
  (void)s.step(x, 1, x);
  EXPECT_THROW((void)s.step(x, 2, x), ModelError);
  EXPECT_THROW(s.set_timesteps(0), ModelError);
  EXPECT_THROW(FlowMatchEulerScheduler(FlowMatchEulerOptions{0.0, 1000}), ModelError);
}

TEST(FlowMatchEuler, ReturnsModelOutputDtype) {
  FlowMatchEulerScheduler s;
  s.set_timesteps(2);
  const auto out = s.step(torch::ones({3}, torch::kBFloat16), 0, torch::ones({3}));
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
}

}  // namespace
}  // namespace omnidp::models

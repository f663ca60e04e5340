#include "omnidp/models/schedulers/unipc.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models {
namespace {

const std::filesystem::path kIo = omnidp::test::fixture("diffusers-ref/schedulers/io.safetensors");

double rel_error(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() /
         std::max(1.0, b.abs().max().item<double>());
}

TEST(UniPC, MatchesFixtureSchedule) {
  OMNIDP_REQUIRE_FIXTURES();
  const SafetensorsFile io(kIo);
  for (const int n : {4, 30, 50}) {
    UniPCScheduler s(UniPCOptions{5.0, 1000, 2, true});
    s.set_timesteps(n);
    const auto prefix = "unipc_shift5_n" + std::to_string(n) + "_";
    EXPECT_TRUE(torch::equal(s.sigmas(), io.tensor(prefix + "sigmas"))) << n;
    EXPECT_TRUE(torch::equal(s.timesteps(), io.tensor(prefix + "timesteps"))) << n;
  }
}

TEST(UniPC, MatchesFixtureTrajectory) {
  OMNIDP_REQUIRE_FIXTURES();
  const SafetensorsFile io(kIo);
  for (const int n : {4, 30, 50}) {
    UniPCScheduler s;
    s.set_timesteps(n);
    const auto prefix = "unipc_shift5_n" + std::to_string(n) + "_";
    auto x = io.tensor(prefix + "x0");
    for (int i = 0; i < n; ++i) {
      x = s.step(io.tensor(prefix + "model_out" + std::to_string(i)), i, x);
      ASSERT_LE(rel_error(x, io.tensor(prefix + "x" + std::to_string(i + 1))), 1e-6)
          << "n=" << n << " step " << i;
    }
  }
}

TEST(UniPC, SetTimestepsResetsHistory) {
  OMNIDP_REQUIRE_FIXTURES();
  const SafetensorsFile io(kIo);
  UniPCScheduler s;
  s.set_timesteps(4);
  auto x = io.tensor("unipc_shift5_n4_x0");
  (void)s.step(io.tensor("unipc_shift5_n4_model_out0"), 0, x);
  s.set_timesteps(4);
  for (int i = 0; i < 4; ++i)
    x = s.step(io.tensor("unipc_shift5_n4_model_out" + std::to_string(i)), i, x);
  EXPECT_LE(rel_error(x, io.tensor("unipc_shift5_n4_x4")), 1e-6);
}

TEST(UniPC, OrderOneIsFlowDdim) {
  // With solver_order 1 there is no history: each step is the first-order exponential
  // integrator, x_next = sigma_next/sigma * x + (1 - sigma_next/sigma) * x0_pred ... for
  // flow sigmas that is plain Euler on the velocity when x0 = x - sigma * v.
  UniPCScheduler s(UniPCOptions{3.0, 1000, 1, true});
  s.set_timesteps(5);
  auto x = torch::linspace(-1, 1, 6);
  const auto v = torch::linspace(0.5, -0.5, 6);
  const auto sig = s.sigmas();
  for (int i = 0; i < 5; ++i) {
    const auto expected = x + (sig[i + 1] - sig[i]) * v;
    x = s.step(v, i, x);
    EXPECT_LE(rel_error(x, expected), 2e-6) << i;
  }
}

TEST(UniPC, Errors) {
  UniPCScheduler s;
  const auto x = torch::zeros({2});
  EXPECT_THROW((void)s.step(x, 0, x), ModelError);
  s.set_timesteps(3);
  EXPECT_THROW((void)s.step(x, 1, x), ModelError);
  EXPECT_THROW(UniPCScheduler(UniPCOptions{5.0, 1000, 4, true}), ModelError);
}

TEST(UniPC, OptionsFromDiffusersConfig) {
  const auto wan = nlohmann::json::parse(R"({
    "_class_name": "UniPCMultistepScheduler", "beta_schedule": "linear", "disable_corrector": [],
    "final_sigmas_type": "zero", "flow_shift": 5.0, "lower_order_final": true,
    "num_train_timesteps": 1000, "predict_x0": true, "prediction_type": "flow_prediction",
    "solver_order": 2, "solver_type": "bh2", "thresholding": false, "use_flow_sigmas": true,
    "use_karras_sigmas": false, "solver_p": null})");
  const auto o = unipc_options_from_config(wan);
  EXPECT_EQ(o.flow_shift, 5.0);
  EXPECT_EQ(o.solver_order, 2);
  EXPECT_EQ(o.num_train_timesteps, 1000);
  EXPECT_TRUE(o.lower_order_final);

  auto bad = wan;
  bad["prediction_type"] = "epsilon";
  try {
    (void)unipc_options_from_config(bad);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("prediction_type = \"epsilon\""), std::string::npos)
        << e.what();
  }
  bad = wan;
  bad["solver_type"] = "bh1";
  EXPECT_THROW((void)unipc_options_from_config(bad), ModelError);
  bad = wan;
  bad.erase("use_flow_sigmas");
  EXPECT_THROW((void)unipc_options_from_config(bad), ModelError);
}

}  // namespace
}  // namespace omnidp::models

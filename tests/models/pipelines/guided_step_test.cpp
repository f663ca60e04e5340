// The guided denoising step: the guidance formula and its window, each branch layout against
// the others with a transformer stand-in that records its calls (batch of 2, two forwards, a
// CFG-parallel group of 2 on the in-process backend), the step loop's stop and progress, and
// the group's leader.
#include "omnidp/models/pipelines/guided_step.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <string>
#include <vector>

#include "models/in_process_group.hpp"
#include "omnidp/collective/collective.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

using testing::on_group;

// A transformer stand-in: the conditional branch predicts `cond`, the unconditional `uncond`,
// both as a batch of 2; every call is recorded.
struct FakeTransformer {
  torch::Tensor cond = torch::tensor({{1.0F, 2.0F, -3.0F}});
  torch::Tensor uncond = torch::tensor({{0.5F, 2.5F, 1.0F}});
  std::vector<CfgBranch> calls;
  torch::Tensor operator()(CfgBranch b) {
    calls.push_back(b);
    if (b == CfgBranch::both) return torch::cat({cond, uncond}, 0);
    return b == CfgBranch::conditional ? cond : uncond;
  }
};

TEST(Guidance, FormulaRescaleAndWindow) {
  const auto cond = torch::tensor({{1.0, 2.0, -3.0}}, torch::kFloat64);
  const auto uncond = torch::tensor({{0.5, 2.5, 1.0}}, torch::kFloat64);
  EXPECT_TRUE(torch::equal(apply_guidance(cond, uncond, 6.0), uncond + 6.0 * (cond - uncond)));
  GuidanceOptions original;
  original.use_original_formulation = true;
  EXPECT_TRUE(torch::equal(apply_guidance(cond, uncond, 2.0, original), cond + 2.0 * (cond - uncond)));
  // rescale_noise_cfg with guidance_rescale 0.7, by hand.
  GuidanceOptions rescale;
  rescale.guidance_rescale = 0.7;
  const auto pred = uncond + 6.0 * (cond - uncond);
  const auto rescaled = pred * (cond.std(1, true, true) / pred.std(1, true, true));
  EXPECT_TRUE(torch::allclose(apply_guidance(cond, uncond, 6.0, rescale),
                              0.7 * rescaled + 0.3 * pred, 0.0, 1e-12));

  GuidanceOptions window;
  window.stop = 0.5;  // steps [0, int(0.5 n))
  EXPECT_TRUE(cfg_enabled(6.0, window, 0, 5));
  EXPECT_TRUE(cfg_enabled(6.0, window, 1, 5));
  EXPECT_FALSE(cfg_enabled(6.0, window, 2, 5));
  EXPECT_FALSE(cfg_enabled(1.0, {}, 0, 5));  // the neutral scale
  EXPECT_TRUE(cfg_enabled(0.5, {}, 0, 5));
  EXPECT_FALSE(cfg_enabled(0.0, original, 0, 5));
  GuidanceOptions off;
  off.enabled = false;
  EXPECT_FALSE(cfg_enabled(6.0, off, 0, 5));
}

TEST(GuidedStep, BatchedAndTwoForwardsGiveTheSamePrediction) {
  FakeTransformer batched, two, unguided;
  const auto like = torch::zeros({1, 3});
  const auto a = guided_prediction({nullptr, true}, true, 5.0, {}, std::ref(batched), like);
  const auto b = guided_prediction({nullptr, false}, true, 5.0, {}, std::ref(two), like);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_TRUE(torch::equal(a, two.uncond + 5.0 * (two.cond - two.uncond)));
  EXPECT_EQ(batched.calls, std::vector<CfgBranch>{CfgBranch::both});
  EXPECT_EQ(two.calls, (std::vector<CfgBranch>{CfgBranch::conditional, CfgBranch::unconditional}));
  // An unguided step runs the conditional branch alone, batched layout or not.
  EXPECT_TRUE(torch::equal(
      guided_prediction({nullptr, true}, false, 5.0, {}, std::ref(unguided), like), unguided.cond));
  EXPECT_EQ(unguided.calls, std::vector<CfgBranch>{CfgBranch::conditional});
}

TEST(GuidedStep, ACfgGroupRunsOneBranchPerRankAndAgrees) {
  const auto like = torch::zeros({1, 3});
  for (const bool guided : {true, false}) {
    std::vector<torch::Tensor> got(2);
    std::vector<std::vector<CfgBranch>> calls(2);
    on_group(2, [&](int r, Collective& c) {
      FakeTransformer t;
      got[static_cast<std::size_t>(r)] =
          guided_prediction({&c, false}, guided, 5.0, {}, std::ref(t), like);
      calls[static_cast<std::size_t>(r)] = t.calls;
    });
    FakeTransformer single;
    const auto want = guided_prediction({nullptr, false}, guided, 5.0, {}, std::ref(single), like);
    EXPECT_TRUE(torch::equal(got[0], want)) << guided;
    EXPECT_TRUE(torch::equal(got[1], want)) << guided;
    EXPECT_EQ(calls[0], std::vector<CfgBranch>{CfgBranch::conditional});
    // Rank 1 runs the unconditional branch of a guided step, nothing otherwise.
    EXPECT_EQ(calls[1],
              guided ? std::vector<CfgBranch>{CfgBranch::unconditional} : std::vector<CfgBranch>{});
  }
  auto three = make_in_process_collectives(3, "g3");
  try {
    check_cfg_group(three[0].get());
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("CFG-parallel needs a group of 2 ranks, not 3"),
              std::string::npos);
  }
  check_cfg_group(nullptr);
}

TEST(DenoisingSteps, ProgressAndTheGroupsStop) {
  std::vector<int> steps_run, progress;
  GenerateContext ctx;
  ctx.on_step = [&](int step, int total) {
    EXPECT_EQ(total, 3);
    progress.push_back(step);
  };
  run_denoising_steps(3, &ctx, torch::kCPU, [&](int i) { steps_run.push_back(i); });
  EXPECT_EQ(steps_run, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(progress, (std::vector<int>{1, 2, 3}));
  run_denoising_steps(2, nullptr, torch::kCPU, [&](int i) { steps_run.push_back(i); });
  EXPECT_EQ(steps_run.size(), 5U);

  // Rank 1 of a CFG group abandons before step 1: both ranks stop there, after one step each.
  std::vector<std::string> errors(2);
  std::vector<int> ran(2, 0);
  on_group(2, [&](int r, Collective& c) {
    GenerateContext group_ctx;
    group_ctx.cfg = &c;
    const auto i = static_cast<std::size_t>(r);
    group_ctx.abandoned = [&, r] { return r == 1 && ran[1] == 1; };
    try {
      run_denoising_steps(3, &group_ctx, torch::kCPU, [&](int) { ++ran[i]; });
    } catch (const ModelError& e) {
      errors[i] = e.what();
    }
  });
  for (int r = 0; r < 2; ++r) {
    const auto i = static_cast<std::size_t>(r);
    EXPECT_EQ(ran[i], 1) << r;
    EXPECT_NE(errors[i].find("abandoned at step 1/3"), std::string::npos) << errors[i];
  }
}

TEST(DenoisingSteps, NonFiniteLatentsFailWithTheirCount) {
  auto latents = torch::zeros({1, 4, 2, 3, 3});
  require_finite_latents(latents);
  latents[0][1][0][0][0] = std::numeric_limits<float>::quiet_NaN();
  latents[0][3][1][2][2] = std::numeric_limits<float>::infinity();
  try {
    require_finite_latents(latents);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(
        e.message(),
        "the latents are not finite after the last denoising step (2 of 72 values NaN or "
        "infinite): the sampling diverged (check guidance_scale, flow_shift and the weights)");
  }
}

TEST(DenoisingSteps, TheLeaderIsRankZeroOfEveryAxis) {
  EXPECT_TRUE(group_leader(nullptr));
  GenerateContext ctx;
  EXPECT_TRUE(group_leader(&ctx));
  auto cfg = make_in_process_collectives(2, "cfg");
  auto tensor = make_in_process_collectives(2, "tp");
  ctx.cfg = cfg[0].get();
  ctx.tensor = tensor[0].get();
  EXPECT_TRUE(group_leader(&ctx));
  ctx.tensor = tensor[1].get();
  EXPECT_FALSE(group_leader(&ctx));
  ctx.tensor = nullptr;
  ctx.sequence = cfg[1].get();
  EXPECT_FALSE(group_leader(&ctx));
}

}  // namespace
}  // namespace omnidp::models

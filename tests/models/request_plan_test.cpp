// A request resolved once (models/request_plan.hpp): the size as sampled, the guided steps.
#include "omnidp/models/request_plan.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "omnidp/models/pipeline.hpp"
#include "request_shape.hpp"

namespace omnidp::models {
namespace {

Request request(int frames, int height, int width, int steps, double guidance_scale) {
  return test::sized_request(frames, height, width, steps, guidance_scale, Request{}.flow_shift);
}

TEST(SampleSize, RoundsAsWanPipelineOrKeepsTheSize) {
  PlanRules wan{4, 16, 2, 2, true, {}};  // Wan2.2-TI2V-5B: VAE 4 x 16, patch 2
  EXPECT_EQ(sample_size(wan, {121, 704, 1280}), (VideoSize{121, 704, 1280}));
  EXPECT_EQ(sample_size(wan, {120, 720, 1290}), (VideoSize{121, 704, 1280}));  // 120 // 4 * 4 + 1
  EXPECT_EQ(sample_size(wan, {2, 31, 64}), (VideoSize{1, 0, 64}));
  EXPECT_EQ(sample_size(wan, {0, 32, 32}), (VideoSize{1, 32, 32}));  // at least one frame
  wan.round_size = false;
  EXPECT_EQ(sample_size(wan, {120, 720, 1290}), (VideoSize{120, 720, 1290}));
}

TEST(PlanRequest, TheSizeAndTheGuidedSteps) {
  const PlanRules wan{4, 16, 2, 2, true, {}};
  auto plan = plan_request(wan, request(18, 480, 832, 4, 5.0));
  EXPECT_EQ(plan.size, (VideoSize{17, 480, 832}));
  EXPECT_EQ(plan.steps, 4);
  EXPECT_EQ(plan.guided, (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(plan.guided_steps(), 4);
  EXPECT_EQ(plan.passes(), 8);
  EXPECT_EQ(plan_request(wan, request(17, 480, 832, 4, 1.0)).passes(), 4);

  PlanRules hv15{4, 16, 1, 1, false, {GuidanceRule::guider, {}}};
  hv15.guidance.guider.stop = 0.5;
  plan = plan_request(hv15, request(33, 480, 848, 4, 6.0));
  EXPECT_EQ(plan.size, (VideoSize{33, 480, 848}));
  EXPECT_EQ(plan.guided, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(plan.passes(), 6);
}

TEST(PlanRules, FromAModelsFacts) {
  ModelInfo info;
  info.vae_temporal = 4;
  info.vae_spatial = 8;
  info.patch_h = 2;
  info.patch_w = 3;
  info.rounds_size = true;
  info.guidance.rule = GuidanceRule::guider;
  info.guidance.guider.start = 0.25;
  const PlanRules rules = plan_rules(info);
  EXPECT_EQ(rules.vae_temporal, 4);
  EXPECT_EQ(rules.vae_spatial, 8);
  EXPECT_EQ(rules.patch_h, 2);
  EXPECT_EQ(rules.patch_w, 3);
  EXPECT_TRUE(rules.round_size);
  EXPECT_EQ(rules.guidance.rule, GuidanceRule::guider);
  EXPECT_EQ(rules.guidance.guider.start, 0.25);
  EXPECT_EQ(sample_size(rules, {9, 50, 50}), (VideoSize{9, 48, 48}));
}

}  // namespace
}  // namespace omnidp::models

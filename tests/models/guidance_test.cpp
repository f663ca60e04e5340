// Which steps are guided: the guider config reader and the two rules (models/guidance.hpp).
#include "omnidp/models/guidance.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

TEST(GuidanceOptionsFromJson, ClassifierFreeGuidanceConfig) {
  const auto g =
      guidance_options_from_json(nlohmann::json{{"_class_name", "ClassifierFreeGuidance"},
                                                {"guidance_scale", 6.0},
                                                {"guidance_rescale", 0.5}},
                                 "guider/config.json");
  EXPECT_DOUBLE_EQ(g.guidance_rescale, 0.5);
  EXPECT_DOUBLE_EQ(g.stop, 1.0);
  EXPECT_THROW((void)guidance_options_from_json(
                   nlohmann::json{{"_class_name", "AdaptiveProjectedGuidance"}}, "g"),
               ModelError);
}

TEST(GuidanceOptionsFromJson, EnabledAndScale) {
  const auto g =
      guidance_options_from_json(nlohmann::json{{"enabled", false}, {"guidance_scale", 4.5}}, "g");
  EXPECT_FALSE(g.enabled);
  ASSERT_TRUE(g.guidance_scale.has_value());
  EXPECT_DOUBLE_EQ(*g.guidance_scale, 4.5);
  EXPECT_FALSE(guidance_options_from_json(nlohmann::json::object(), "g").guidance_scale.has_value());
}

TEST(StepGuidance, TheScaleAboveOneRuleGuidesEveryStepAboveOne) {
  const StepGuidance wan;  // GuidanceRule::scale_above_one
  EXPECT_TRUE(step_guided(wan, 5.0, 0, 4));
  EXPECT_TRUE(step_guided(wan, 5.0, 3, 4));
  EXPECT_FALSE(step_guided(wan, 1.0, 0, 4));
  EXPECT_FALSE(step_guided(wan, 0.5, 0, 4));  // below 1: never (WanPipeline's guidance_scale > 1)
  EXPECT_EQ(guided_steps(wan, 5.0, 4), 4);
  EXPECT_EQ(guided_steps(wan, 1.0, 4), 0);
}

TEST(StepGuidance, TheGuiderRuleIsItsWindowAndNeutralScale) {
  StepGuidance hv15{GuidanceRule::guider, {}};
  EXPECT_EQ(guided_steps(hv15, 6.0, 10), 10);
  EXPECT_EQ(guided_steps(hv15, 0.5, 10), 10);  // any scale but the neutral 1
  EXPECT_EQ(guided_steps(hv15, 1.0, 10), 0);
  hv15.guider.start = 0.2;
  hv15.guider.stop = 0.5;  // steps [2, 5)
  EXPECT_FALSE(step_guided(hv15, 6.0, 1, 10));
  EXPECT_TRUE(step_guided(hv15, 6.0, 2, 10));
  EXPECT_TRUE(step_guided(hv15, 6.0, 4, 10));
  EXPECT_FALSE(step_guided(hv15, 6.0, 5, 10));
  EXPECT_EQ(guided_steps(hv15, 6.0, 10), 3);
  hv15.guider.enabled = false;
  EXPECT_EQ(guided_steps(hv15, 6.0, 10), 0);
}

}  // namespace
}  // namespace omnidp::models

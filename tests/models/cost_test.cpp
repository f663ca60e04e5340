// The a-priori cost of a request (models/cost.hpp): a guided step counts twice, under the
// model's own guidance rule.
#include "omnidp/models/cost.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "omnidp/models/model_facts.hpp"
#include "omnidp/models/registry/registry.hpp"

namespace omnidp {
namespace {

const bool kRegistered = (models::register_builtin_models(), true);

Request request(int steps, double guidance_scale) {
  Request r;
  r.num_frames = 33;
  r.height = 480;
  r.width = 848;
  r.num_inference_steps = steps;
  r.guidance_scale = guidance_scale;
  return r;
}

// passes = cost_features().linear / tokens.
double passes(const ModelInfo& info, const Request& r) {
  return cost_features(info, r).linear / latent_tokens(info, r.num_frames, r.height, r.width);
}

TEST(CostFeatures, AGuidedStepCountsTwiceUnderTheModelsRule) {
  ModelInfo wan;  // GuidanceRule::scale_above_one
  EXPECT_DOUBLE_EQ(passes(wan, request(10, 5.0)), 20.0);
  EXPECT_DOUBLE_EQ(passes(wan, request(10, 1.0)), 10.0);
  EXPECT_DOUBLE_EQ(passes(wan, request(10, 0.5)), 10.0);

  ModelInfo hv15;
  hv15.guidance.rule = models::GuidanceRule::guider;
  EXPECT_DOUBLE_EQ(passes(hv15, request(10, 6.0)), 20.0);
  EXPECT_DOUBLE_EQ(passes(hv15, request(10, 0.5)), 20.0);  // the guider guides below 1 too
  // A limited guider: CFG on steps [0, 5) only (counted as 20 passes before).
  hv15.guidance.guider.stop = 0.5;
  EXPECT_DOUBLE_EQ(passes(hv15, request(10, 6.0)), 15.0);
  hv15.guidance.guider.enabled = false;  // a CFG-distilled checkpoint's guider
  EXPECT_DOUBLE_EQ(passes(hv15, request(10, 6.0)), 10.0);
  const double tokens = latent_tokens(hv15, 33, 480, 848);
  EXPECT_DOUBLE_EQ(cost_features(hv15, request(10, 6.0)).quadratic, 10.0 * tokens * tokens);
}

TEST(CostFeatures, HunyuanVideoCountsTheSnapshotsGuiderWindow) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("omnidp-cost-guider-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "guider");
  ModelConfig model;
  model.name = "hunyuanvideo-1.5";
  model.weights = WeightsSource::random;
  EXPECT_DOUBLE_EQ(passes(describe_model(model), request(8, 6.0)), 16.0);  // no snapshot
  model.path = dir.string();
  {
    std::ofstream(dir / "guider" / "guider_config.json")
        << R"({"_class_name": "ClassifierFreeGuidance", "guidance_scale": 6.0, "stop": 0.25})";
  }
  const ModelInfo info = describe_model(model);
  EXPECT_EQ(info.guidance.rule, models::GuidanceRule::guider);
  EXPECT_DOUBLE_EQ(info.guidance.guider.stop, 0.25);
  EXPECT_DOUBLE_EQ(passes(info, request(8, 6.0)), 10.0);  // 2 guided steps of 8
  // A guider the pipeline cannot run is left to the pipeline's error: the default window.
  { std::ofstream(dir / "guider" / "guider_config.json") << R"({"_class_name": "Other"})"; }
  EXPECT_DOUBLE_EQ(passes(describe_model(model), request(8, 6.0)), 16.0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omnidp

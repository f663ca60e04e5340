#include "omnidp/refcheck/checks.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp::refcheck {
namespace {

TEST(MaxRelError, DefinitionAndEdgeCases) {
  const auto ref = torch::tensor({4.0F, -2.0F});
  EXPECT_DOUBLE_EQ(max_rel_error(torch::tensor({4.0F, -1.0F}), ref), 1.0 / 4.0);
  // max|ref| < 1: the denominator is 1.
  EXPECT_DOUBLE_EQ(max_rel_error(torch::tensor({0.5F}), torch::tensor({0.25F})), 0.25);
  EXPECT_EQ(max_rel_error(ref, ref), 0.0);
  EXPECT_TRUE(std::isinf(max_rel_error(torch::tensor({NAN, 0.0F}), ref)));
  EXPECT_THROW((void)max_rel_error(torch::zeros({3}), torch::zeros({2})), std::invalid_argument);
}

TEST(Compare, StatusAndShapeMismatch) {
  EXPECT_EQ(compare("c", torch::zeros({2}), torch::zeros({2}), 0.0).status, CaseResult::Status::pass);
  const auto fail = compare("c", torch::ones({2}), torch::zeros({2}), 0.5);
  EXPECT_EQ(fail.status, CaseResult::Status::fail);
  EXPECT_DOUBLE_EQ(fail.max_rel_error, 1.0);
  const auto shape = compare("c", torch::zeros({2, 1}), torch::zeros({2}), 1.0);
  EXPECT_EQ(shape.status, CaseResult::Status::fail);
  EXPECT_EQ(shape.note, "shape mismatch: ours [2,1] vs reference [2]");
}

TEST(Tolerance, Documented) {
  RefcheckOptions fp32;
  RefcheckOptions bf16;
  bf16.dtype = torch::kBFloat16;
  EXPECT_EQ(tolerance(ToleranceClass::exact, fp32), 0.0);
  EXPECT_EQ(tolerance(ToleranceClass::scheduler, bf16), 1e-6);
  EXPECT_EQ(tolerance(ToleranceClass::forward, fp32), 1e-4);
  EXPECT_EQ(tolerance(ToleranceClass::pipeline, fp32), 1e-3);
  EXPECT_EQ(tolerance(ToleranceClass::forward, bf16), 8e-2);
  EXPECT_EQ(tolerance(ToleranceClass::pipeline, bf16), 5e-2);
}

TEST(Tolerance, PipelineBoundsFollowTheReferencesOwnBf16Error) {
  RefcheckOptions fp32;
  RefcheckOptions bf16;
  bf16.dtype = torch::kBFloat16;
  const auto expect = [](const PipelineBounds& b, double latents, double video, double levels) {
    EXPECT_DOUBLE_EQ(b.final_latents, latents);
    EXPECT_DOUBLE_EQ(b.video, video);
    EXPECT_EQ(b.video_uint8, levels);
  };
  // float32: the fixture README's bounds, for every case.
  for (const char* kind : {"wan_pipeline_t2v", "hv15_pipeline_t2v", "hv15_pipeline_i2v"}) {
    expect(pipeline_bounds(kind, fp32), 1e-3, 1e-3, 1.0);
  }
  // bf16: the pipeline class, unless the reference itself strays further (1.25 x its error).
  expect(pipeline_bounds("wan_pipeline_i2v", bf16), 5e-2, 5e-2, 13.0);
  expect(pipeline_bounds("hv15_pipeline_t2v", bf16), 1.25 * 0.0675, 1.25 * 0.166, 53.0);
  expect(pipeline_bounds("hv15_pipeline_i2v", bf16), 1.25 * 0.116, 1.25 * 0.109, 35.0);
}

TEST(Tolerance, ComparePipelineChecksLatentsVideoAndLevels) {
  const auto ref_video = torch::full({1, 2, 2, 2, 3}, 100.0 / 255.0);  // level 100
  auto video = ref_video.clone();
  video.index_put_({0, 0, 0, 0, 0}, 103.0 / 255.0);  // three levels up
  const auto latents = torch::ones({1, 2, 1, 1, 1});
  std::vector<CaseResult> results;
  compare_pipeline(results, {1e-3, 2e-2, 2.0}, latents, latents, video, ref_video);
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(results[0].check, "final_latents");
  EXPECT_EQ(results[0].status, CaseResult::Status::pass);
  EXPECT_EQ(results[1].check, "video");
  EXPECT_EQ(results[1].status, CaseResult::Status::pass);  // 3/255 = 1.2e-2 <= 2e-2
  EXPECT_EQ(results[2].check, "video_uint8");
  EXPECT_EQ(results[2].max_rel_error, 3.0);
  EXPECT_EQ(results[2].status, CaseResult::Status::fail);
  results.clear();
  compare_pipeline(results, {1e-3, 2e-2, 3.0}, latents, torch::Tensor(), video, ref_video);
  ASSERT_EQ(results.size(), 2U);  // no reference latents: no latents check
  EXPECT_EQ(results[1].status, CaseResult::Status::pass);
}

// Step-cache cases (scripts/step_cache_fixtures.py): the policy read from case.json as
// generation.cache reads it, and the decisions compared letter by letter per CFG branch.
TEST(StepCacheCase, PolicyFromCaseJson) {
  const auto none = case_step_cache(nlohmann::json::parse(R"({"steps": 12})"), "/c");
  EXPECT_FALSE(none.has_value());
  const auto taylor = case_step_cache(
      nlohmann::json::parse(R"({"cache": {"policy": "taylorseer", "cache_interval": 4,
                                          "disable_cache_before_step": 2, "max_order": 2}})"),
      "/c");
  ASSERT_TRUE(taylor.has_value());
  EXPECT_EQ(taylor->policy, CachePolicy::taylorseer);
  EXPECT_EQ(taylor->cache_interval, 4);
  EXPECT_EQ(taylor->disable_cache_before_step, 2);
  EXPECT_EQ(taylor->max_order, 2);
  const auto mag = case_step_cache(
      nlohmann::json::parse(R"({"cache": {"policy": "magcache", "threshold": 0.06, "max_skip_steps": 3,
                                          "retention_ratio": 0.2, "mag_ratios": [1.0, 0.99, 0.98]}})"),
      "/c");
  ASSERT_TRUE(mag.has_value());
  EXPECT_EQ(mag->mag_ratios, (std::vector<double>{1.0, 0.99, 0.98}));
  try {
    (void)case_step_cache(
        nlohmann::json::parse(R"({"cache": {"policy": "first_block", "threshold": -1}})"), "/c");
    FAIL() << "a negative threshold was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/c/case.json:cache.threshold"), std::string::npos)
        << e.what();
  }
}

TEST(StepCacheCase, DecisionsComparedPerBranch) {
  const auto j = nlohmann::json::parse(R"({"cache_decisions": {"cond": "CCS", "uncond": "CSS"}})");
  std::vector<CaseResult> results;
  compare_cache_decisions(results, j, "transformer 0 cond CCS, transformer 0 uncond CCS");
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[0].check, "cache_decisions_cond");
  EXPECT_EQ(results[0].status, CaseResult::Status::pass);
  EXPECT_EQ(results[1].check, "cache_decisions_uncond");
  EXPECT_EQ(results[1].status, CaseResult::Status::fail);
  EXPECT_EQ(results[1].note, "ours CCS, reference CSS");
  results.clear();
  compare_cache_decisions(results, j, "");  // a pipeline that ran no cache
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[0].status, CaseResult::Status::fail);
  EXPECT_EQ(results[0].note, "ours (none), reference CCS");
  results.clear();
  compare_cache_decisions(results, nlohmann::json::object(), "transformer 0 cond CCS");
  EXPECT_TRUE(results.empty());
}

TEST(StepCacheCase, SecondExpertsDecisionsComparedWithTransformer1) {
  // Wan2.2-A14B: transformer_2's branches are cond_2 and uncond_2 (nlohmann orders the keys).
  const auto j = nlohmann::json::parse(
      R"({"cache_decisions": {"cond": "CS", "uncond": "CC", "cond_2": "CSS", "uncond_2": "CCS"}})");
  std::vector<CaseResult> results;
  compare_cache_decisions(results, j,
                          "transformer 0 cond CS, transformer 0 uncond CC, transformer 1 cond CSS, "
                          "transformer 1 uncond CSS");
  ASSERT_EQ(results.size(), 4U);
  EXPECT_EQ(results[0].check, "cache_decisions_cond");
  EXPECT_EQ(results[0].status, CaseResult::Status::pass);
  EXPECT_EQ(results[1].check, "cache_decisions_cond_2");
  EXPECT_EQ(results[1].status, CaseResult::Status::pass);
  EXPECT_EQ(results[2].check, "cache_decisions_uncond");
  EXPECT_EQ(results[2].status, CaseResult::Status::pass);
  EXPECT_EQ(results[3].check, "cache_decisions_uncond_2");
  EXPECT_EQ(results[3].status, CaseResult::Status::fail);
  EXPECT_EQ(results[3].note, "ours CSS, reference CCS");
}

}  // namespace
}  // namespace omnidp::refcheck

#include "omnidp/refcheck/wan_cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include "fixtures.hpp"
#include "omnidp/refcheck/refcheck.hpp"

namespace omnidp::refcheck {
namespace {
namespace fs = std::filesystem;

const fs::path kRef = omnidp::test::fixture("diffusers-ref");

nlohmann::json case_json(const fs::path& dir) {
  std::ifstream in(dir / "case.json");
  return nlohmann::json::parse(in);
}

void expect_all_pass(const std::vector<CaseResult>& results, const std::vector<std::string>& checks) {
  std::vector<std::string> names;
  for (const auto& r : results) {
    names.push_back(r.check);
    EXPECT_EQ(r.status, CaseResult::Status::pass)
        << r.check << " err " << r.max_rel_error << " tol " << r.tolerance << " " << r.note;
  }
  EXPECT_EQ(names, checks);
}

TEST(WanCases, TransformerBothTimestepModes) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "wan_transformer";
  const auto results = run_wan_transformer(dir, case_json(dir), RefcheckOptions{});
  expect_all_pass(results, {"out_scalar_t", "out_per_token_t"});
  for (const auto& r : results) EXPECT_DOUBLE_EQ(r.tolerance, 1e-4);
}

TEST(WanCases, PipelineTextToVideo) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "wan_pipeline_t2v";
  expect_all_pass(run_wan_pipeline_t2v(dir, case_json(dir), RefcheckOptions{}),
                  {"noise_from_seed", "final_latents", "video", "video_uint8"});
}

TEST(WanCases, PipelineImageToVideo) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "wan_pipeline_i2v";
  expect_all_pass(run_wan_pipeline_i2v(dir, case_json(dir), RefcheckOptions{}),
                  {"noise_from_seed", "video", "video_uint8"});
}

TEST(WanCases, ADifferentGuidanceFailsTheVideoCheck) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "wan_pipeline_t2v";
  auto j = case_json(dir);
  j["guidance_scale"] = 1.0;
  const auto results = run_wan_pipeline_t2v(dir, j, RefcheckOptions{});
  bool video_failed = false;
  for (const auto& r : results) {
    if (r.check == "video") video_failed = r.status == CaseResult::Status::fail;
  }
  EXPECT_TRUE(video_failed);
}

// The Wan family's cases live in the repository (scripts/wan_family_fixtures.py): always there.
fs::path family_case(const char* name) {
  return omnidp::test::fixture(std::string("diffusers-ref/") + name);
}

const std::vector<std::string> kPipelineChecks{"noise_from_seed", "final_latents", "video",
                                               "video_uint8"};

TEST(WanFamilyCases, Wan21TextToVideoHasOneTimestepPerSample) {
  const auto dir = family_case("wan_pipeline_21_t2v");
  expect_all_pass(run_case(dir, "wan_pipeline_21_t2v", RefcheckOptions{}), kPipelineChecks);
}

TEST(WanFamilyCases, A14bTextToVideoSwitchesExpertsAndGuidanceAtTheBoundary) {
  const auto dir = family_case("wan_pipeline_a14b_t2v");
  expect_all_pass(run_case(dir, "wan_pipeline_a14b_t2v", RefcheckOptions{}), kPipelineChecks);
}

// Each side of the boundary matters: the high-noise expert alone, the boundary moved by one
// step, or one guidance scale for both experts each fail the video check.
TEST(WanFamilyCases, TheBoundaryAndTheSecondGuidanceAreChecked) {
  const auto dir = family_case("wan_pipeline_a14b_t2v");
  const auto video_fails = [&](nlohmann::json j) {
    for (const auto& r : run_wan_pipeline_t2v(dir, j, RefcheckOptions{})) {
      if (r.check == "video") return r.status == CaseResult::Status::fail;
    }
    return false;
  };
  auto later = case_json(dir);
  later["boundary_ratio"] = 0.7;  // timesteps 999 937 857 750 | 600 376
  EXPECT_TRUE(video_fails(later));
  auto same_guidance = case_json(dir);
  same_guidance.erase("guidance_scale_2");
  EXPECT_TRUE(video_fails(same_guidance));
  auto one_expert = case_json(dir);
  one_expert.erase("transformer_2");
  one_expert.erase("guidance_scale_2");  // which needs the second expert
  EXPECT_TRUE(video_fails(one_expert));
}

TEST(WanFamilyCases, A14bImageToVideoConcatenatesMaskAndImageLatents) {
  const auto dir = family_case("wan_pipeline_a14b_i2v");
  expect_all_pass(run_case(dir, "wan_pipeline_a14b_i2v", RefcheckOptions{}), kPipelineChecks);
}

TEST(WanFamilyCases, A14bFirstLastFrameToVideo) {
  const auto dir = family_case("wan_pipeline_a14b_flf2v");
  expect_all_pass(run_case(dir, "wan_pipeline_a14b_flf2v", RefcheckOptions{}), kPipelineChecks);
}

// Wan2.1 I2V: CLIPVisionModel's hidden_states[-2] of the image through the image embedder
// into every block's added K/V cross-attention, beside the 36-channel concatenation.
TEST(WanFamilyCases, Wan21ImageToVideoAttendsToTheClipTokens) {
  const auto dir = family_case("wan_pipeline_21_i2v");
  expect_all_pass(run_case(dir, "wan_pipeline_21_i2v", RefcheckOptions{}), kPipelineChecks);
}

// ... and first-last-frame: both images' tokens, with the image embedder's pos_embed.
TEST(WanFamilyCases, Wan21FirstLastFrameToVideoTakesBothImagesTokens) {
  const auto dir = family_case("wan_pipeline_21_flf2v");
  expect_all_pass(run_case(dir, "wan_pipeline_21_flf2v", RefcheckOptions{}), kPipelineChecks);
}

// LoRA adapters loaded by diffusers' own load_lora_weights (scripts/lora_fixtures.py: PEFT's
// unfused forward, W x + scale * B(A x)), fused here into the weights (model.lora) and run
// beside the layers (a manifest line's set): each format and scale, two adapters stacked, and
// the A14B Lightning-shaped pair (HIGH into the high-noise expert at 1, LOW into the low-noise
// one at 0.5) within the pipeline bounds (the video within one uint8 level).
TEST(LoraCases, EveryFormatAndScaleMatchesDiffusersLoadLoraWeights) {
  for (const bool per_request : {false, true}) {
    for (const char* name : {"wan_lora_peft", "wan_lora_kohya", "wan_lora_kohya_ab",
                             "wan_lora_musubi", "wan_lora_stacked", "wan_lora_a14b_lightning"}) {
      SCOPED_TRACE(std::string(name) + (per_request ? " (per request)" : " (fused)"));
      const auto dir = family_case(name);
      RefcheckOptions options;
      options.lora_per_request = per_request;
      expect_all_pass(run_case(dir, name, options), kPipelineChecks);
    }
  }
}

// The checks can fail: without its adapters, with another scale, or with the low-noise file in
// the other expert, each case's video differs from diffusers'.
TEST(LoraCases, AWrongScaleExpertOrNoAdapterFailsTheVideoCheck) {
  const auto video_fails = [](const char* name, const std::function<void(nlohmann::json&)>& edit) {
    const auto dir = family_case(name);
    auto j = case_json(dir);
    edit(j);
    for (const auto& r : run_wan_pipeline_t2v(dir, j, RefcheckOptions{})) {
      if (r.check == "video") return r.status == CaseResult::Status::fail;
    }
    return false;
  };
  EXPECT_TRUE(video_fails("wan_lora_kohya", [](nlohmann::json& j) { j.erase("lora"); }));
  EXPECT_TRUE(video_fails("wan_lora_peft", [](nlohmann::json& j) { j["lora"][0]["scale"] = 1.0; }));
  EXPECT_TRUE(video_fails("wan_lora_a14b_lightning",
                          [](nlohmann::json& j) { j["lora"][1]["expert"] = "all"; }));
}

}  // namespace
}  // namespace omnidp::refcheck

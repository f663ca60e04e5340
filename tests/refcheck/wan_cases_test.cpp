#include "omnidp/refcheck/wan_cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include "fixtures.hpp"

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

}  // namespace
}  // namespace omnidp::refcheck

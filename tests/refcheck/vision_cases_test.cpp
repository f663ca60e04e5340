#include "omnidp/refcheck/vision_cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fixtures.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/refcheck/refcheck.hpp"

namespace omnidp::refcheck {
namespace {
namespace fs = std::filesystem;

const fs::path kCase = omnidp::test::fixture("diffusers-ref/siglip_vision");

nlohmann::json read_case_json(const fs::path& dir) {
  std::ifstream in(dir / "case.json");
  return nlohmann::json::parse(in);
}

TEST(VisionCases, SiglipVisionPassesBothChecks) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_siglip_vision(kCase, read_case_json(kCase), RefcheckOptions{});
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[0].check, "pixel_values");
  EXPECT_EQ(results[0].tolerance, 0.0);
  EXPECT_EQ(results[1].check, "last_hidden_state");
  EXPECT_DOUBLE_EQ(results[1].tolerance, 1e-4);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::pass)
        << r.check << " err " << r.max_rel_error << " " << r.note;
  }
}

TEST(VisionCases, TheDispatcherKnowsSiglipVision) {
  OMNIDP_REQUIRE_FIXTURES();
  EXPECT_EQ(identify_case(kCase, read_case_json(kCase)), "siglip_vision");
  EXPECT_TRUE(static_cast<bool>(find_runner("siglip_vision")));
}

// A copy of the case whose expected tokens are off: last_hidden_state fails, pixel_values
// still passes (the checks are independent).
TEST(VisionCases, AWrongReferenceFails) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = fs::temp_directory_path() / "omnidp-refcheck-vision-wrong";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f :
       {"case.json", "config.json", "model.safetensors", "preprocessor_config.json"}) {
    fs::copy_file(kCase / f, dir / f);
  }
  const models::SafetensorsFile io(kCase / "io.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& name : io.names()) {
    auto t = io.tensor(name);
    if (name == "last_hidden_state") t = t + 0.05;
    tensors.emplace_back(name, t);
  }
  models::save_safetensors(dir / "io.safetensors", tensors);
  const auto results = run_siglip_vision(dir, read_case_json(dir), RefcheckOptions{});
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[0].status, CaseResult::Status::pass);
  EXPECT_EQ(results[1].status, CaseResult::Status::fail);
  EXPECT_GT(results[1].max_rel_error, 1e-2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace omnidp::refcheck

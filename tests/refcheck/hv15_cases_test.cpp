#include "omnidp/refcheck/hv15_cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "fixtures.hpp"

namespace omnidp::refcheck {
namespace {

namespace fs = std::filesystem;

const fs::path kRef = omnidp::test::fixture("diffusers-ref");

TEST(Hv15Cases, TransformerFixturePassesMaskedAndDropped) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_hv15_transformer(kRef / "hv15_transformer", nlohmann::json::object(), RefcheckOptions{});
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[0].check, "out");
  EXPECT_EQ(results[1].check, "out_drop_padding");
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::pass) << r.check << " " << r.max_rel_error << " " << r.note;
    EXPECT_DOUBLE_EQ(r.tolerance, 1e-4);
  }
}

TEST(Hv15Cases, VaeFixtureDecodePasses) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_case(kRef / "hv15_vae", "hv15_vae", RefcheckOptions{});
  ASSERT_EQ(results.size(), 1U);
  EXPECT_EQ(results[0].check, "decoded");
  EXPECT_EQ(results[0].status, CaseResult::Status::pass) << results[0].max_rel_error << " " << results[0].note;
}

TEST(Hv15Cases, DispatcherRecognisesTheTransformerCase) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_case(kRef / "hv15_transformer", "hv15_transformer", RefcheckOptions{});
  ASSERT_EQ(results.size(), 2U);
  for (const auto& r : results) EXPECT_EQ(r.status, CaseResult::Status::pass) << r.check << ": " << r.note;
}

// A copy of the case with the expected output perturbed beyond the tolerance must FAIL.
TEST(Hv15Cases, CorruptedExpectedOutputFails) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = fs::temp_directory_path() / "omnidp_hv15_cases_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto src = kRef / "hv15_transformer";
  for (const char* f : {"config.json", "case.json", "diffusion_pytorch_model.safetensors"}) {
    fs::copy_file(src / f, dir / f);
  }
  const models::SafetensorsFile io(src / "io.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& name : io.names()) {
    auto t = io.tensor(name);
    if (name == "out") t.view({-1})[17] += 0.01;
    tensors.emplace_back(name, t);
  }
  models::save_safetensors(dir / "io.safetensors", tensors);
  const auto results = run_hv15_transformer(dir, nlohmann::json::object(), RefcheckOptions{});
  ASSERT_EQ(results.size(), 2U);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::fail) << r.check;
    EXPECT_GT(r.max_rel_error, 1e-3);
  }
  fs::remove_all(dir);
}

TEST(Hv15Cases, MissingWeightsAreAnError) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = fs::temp_directory_path() / "omnidp_hv15_vae_cases_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kRef / "hv15_vae" / "io.safetensors", dir / "io.safetensors");
  fs::copy_file(kRef / "hv15_vae" / "config.json", dir / "config.json");
  EXPECT_THROW((void)run_hv15_vae(dir, nlohmann::json::object(), RefcheckOptions{}), Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace omnidp::refcheck

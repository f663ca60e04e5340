#include "omnidp/refcheck/wan_vae_cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/refcheck/refcheck.hpp"

namespace omnidp::refcheck {
namespace {

namespace fs = std::filesystem;

const fs::path kCase = omnidp::test::fixture("diffusers-ref/wan22_vae");

TEST(WanVaeCases, FixtureDecodeAndEncodePass) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_wan_vae(kCase, nlohmann::json::object(), RefcheckOptions{});
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(results[0].check, "decoded");
  EXPECT_EQ(results[1].check, "encoded_mean");
  EXPECT_EQ(results[2].check, "encoded_logvar");
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::pass) << r.check << " " << r.max_rel_error;
    EXPECT_DOUBLE_EQ(r.tolerance, 1e-4);
    EXPECT_LE(r.max_rel_error, 1e-4);
  }
}

// The Wan2.1 layout (not residual, z 16, 4 x 8 x 8: Wan2.1 and Wan2.2-A14B), from the repository's
// own fixtures (scripts/wan_family_fixtures.py): always there, no skip.
TEST(WanVaeCases, Wan21LayoutDecodesAndEncodesAsDiffusers) {
  const auto dir = omnidp::test::fixture("diffusers-ref/wan21_vae");
  const auto results = run_case(dir, "wan21_vae", RefcheckOptions{});
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(results[0].check, "decoded");
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::pass) << r.check << " " << r.max_rel_error << r.note;
    EXPECT_LE(r.max_rel_error, 1e-4);
  }
}

TEST(WanVaeCases, DispatcherRecognisesTheCase) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_case(kCase, "wan22_vae", RefcheckOptions{});
  ASSERT_EQ(results.size(), 3U);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::pass) << r.check << ": " << r.note;
  }
}

TEST(WanVaeCases, MissingWeightsAreAnError) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = fs::temp_directory_path() / "omnidp_wan_vae_cases_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kCase / "io.safetensors", dir / "io.safetensors");
  fs::copy_file(kCase / "config.json", dir / "config.json");
  EXPECT_THROW((void)run_wan_vae(dir, nlohmann::json::object(), RefcheckOptions{}), Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace omnidp::refcheck

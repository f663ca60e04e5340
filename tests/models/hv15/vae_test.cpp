#include "omnidp/models/hv15/vae.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "omnidp/refcheck/hv15_cases.hpp"

namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;

namespace {
const fs::path kCase = fs::path(OMNIDP_SHARED_DIR) / "fixtures/diffusers-ref/hv15_vae";
}

TEST(Hv15Vae, FixtureDecodeMatchesDiffusers) {
  omnidp::refcheck::RefcheckOptions options;
  const auto results = omnidp::refcheck::run_hv15_vae(kCase, {}, options);
  ASSERT_EQ(results.size(), 1U);
  EXPECT_EQ(results[0].status, omnidp::refcheck::CaseResult::Status::pass) << results[0].max_rel_error << results[0].note;
  std::printf("%s %.3e\n", results[0].check.c_str(), results[0].max_rel_error);
}

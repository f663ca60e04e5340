#include "omnidp/models/hv15/transformer.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "omnidp/refcheck/hv15_cases.hpp"

namespace fs = std::filesystem;
namespace hv = omnidp::models::hv15;

namespace {
const fs::path kCase = fs::path(OMNIDP_SHARED_DIR) / "fixtures/diffusers-ref/hv15_transformer";
}

TEST(Hv15Transformer, FixtureMatchesDiffusers) {
  omnidp::refcheck::RefcheckOptions options;
  const auto results = omnidp::refcheck::run_hv15_transformer(kCase, {}, options);
  ASSERT_EQ(results.size(), 2U);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, omnidp::refcheck::CaseResult::Status::pass) << r.check << " " << r.max_rel_error << " " << r.note;
    std::printf("%s %.3e\n", r.check.c_str(), r.max_rel_error);
  }
}

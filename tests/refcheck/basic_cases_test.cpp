#include "omnidp/refcheck/basic_cases.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "fixtures.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::refcheck {
namespace {
namespace fs = std::filesystem;

const fs::path kSchedulers = omnidp::test::fixture("diffusers-ref/schedulers");

fs::path fresh_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = fs::temp_directory_path() / ("omnidp-basic-" + std::string(info->name()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The fixture's tensors whose names start with `prefix`, optionally renamed/filtered.
std::vector<std::pair<std::string, torch::Tensor>> fixture_group(const std::string& prefix) {
  const models::SafetensorsFile io(kSchedulers / "io.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& name : io.names()) {
    if (name.rfind(prefix, 0) == 0) out.emplace_back(name, io.tensor(name));
  }
  return out;
}

TEST(BasicCases, SchedulersRunOnWhateverGroupsExist) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = fresh_dir("subset");
  models::save_safetensors(dir / "io.safetensors", fixture_group("unipc_shift5_n4_"));
  const auto results = run_schedulers(dir, nlohmann::json::object(), RefcheckOptions{});
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(results[0].check, "unipc_shift5_n4_sigmas");
  EXPECT_EQ(results[1].check, "unipc_shift5_n4_timesteps");
  EXPECT_EQ(results[2].check, "unipc_shift5_n4_trajectory");
  for (const auto& r : results)
    EXPECT_EQ(r.status, CaseResult::Status::pass) << r.check << " " << r.note;
}

TEST(BasicCases, OtherShiftIsReadFromTheName) {
  OMNIDP_REQUIRE_FIXTURES();
  // The fixture's shift-5 Euler sigmas do not match a schedule named shift 3: FAIL.
  const auto dir = fresh_dir("shift");
  auto group = fixture_group("euler_shift5_n4_");
  for (auto& [name, t] : group) name.replace(0, 12, "euler_shift3");
  models::save_safetensors(dir / "io.safetensors", group);
  const auto results = run_schedulers(dir, nlohmann::json::object(), RefcheckOptions{});
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[0].check, "euler_shift3_n4_sigmas");
  EXPECT_EQ(results[0].status, CaseResult::Status::fail);
  EXPECT_GT(results[0].max_rel_error, 0.01);
}

TEST(BasicCases, IncompleteTrajectoryFails) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = fresh_dir("incomplete");
  auto group = fixture_group("unipc_shift5_n4_");
  group.erase(std::remove_if(group.begin(), group.end(),
                             [](const auto& kv) { return kv.first == "unipc_shift5_n4_x3"; }),
              group.end());
  models::save_safetensors(dir / "io.safetensors", group);
  const auto results = run_schedulers(dir, nlohmann::json::object(), RefcheckOptions{});
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(results[2].status, CaseResult::Status::fail);
  EXPECT_NE(results[2].note.find("2/4 steps"), std::string::npos) << results[2].note;
}

TEST(BasicCases, RngUsesSeedFromNameAndShapeFromTensor) {
  const auto dir = fresh_dir("rng");
  // torch.randn((2,), generator=manual_seed(0)) = [1.5409961, -0.2934289] (PyTorch docs' classic values).
  models::save_safetensors(
      dir / "io.safetensors",
      {{"randn_seed0_two", torch::tensor({1.5409960746765137F, -0.293428897857666F})},
       {"not_a_randn", torch::zeros({1})}});
  const auto results = run_rng(dir, nlohmann::json::object(), RefcheckOptions{});
  ASSERT_EQ(results.size(), 1U);
  EXPECT_EQ(results[0].check, "randn_seed0_two");
  EXPECT_EQ(results[0].status, CaseResult::Status::pass) << results[0].max_rel_error;
}

}  // namespace
}  // namespace omnidp::refcheck

#include "omnidp/refcheck/text_cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "fixtures.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/refcheck/refcheck.hpp"

namespace omnidp::refcheck {
namespace {
namespace fs = std::filesystem;

const fs::path kRef = omnidp::test::fixture("transformers-ref");

nlohmann::json case_json(const fs::path& dir) {
  std::ifstream in(dir / "case.json");
  return nlohmann::json::parse(in);
}

std::vector<std::string> expect_all_pass(const std::vector<CaseResult>& results) {
  std::vector<std::string> names;
  for (const auto& r : results) {
    names.push_back(r.check);
    EXPECT_EQ(r.status, CaseResult::Status::pass)
        << r.check << " err " << r.max_rel_error << " tol " << r.tolerance << " " << r.note;
  }
  return names;
}

TEST(TextCases, Umt5Encoder) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "umt5_encoder";
  const auto results = run_umt5_encoder(dir, case_json(dir), RefcheckOptions{});
  EXPECT_EQ(expect_all_pass(results), (std::vector<std::string>{"last_hidden_state"}));
  EXPECT_DOUBLE_EQ(results.at(0).tolerance, 1e-4);
}

TEST(TextCases, Byt5EncoderAndTokenizer) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "byt5_encoder";
  const auto results = run_byt5_encoder(dir, case_json(dir), RefcheckOptions{});
  EXPECT_EQ(expect_all_pass(results),
            (std::vector<std::string>{"last_hidden_state", "text0_ids", "text1_ids", "text2_ids"}));
  for (const auto& r : results) {
    if (r.check != "last_hidden_state") {
      EXPECT_EQ(r.tolerance, 0.0);
    }
  }
}

TEST(TextCases, Qwen25VLTextHiddenStateMinus3AndLast) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "qwen25vl_text";
  const auto results = run_qwen25vl_text(dir, case_json(dir), RefcheckOptions{});
  EXPECT_EQ(expect_all_pass(results),
            (std::vector<std::string>{"hidden_states_minus3", "last_hidden_state"}));
}

TEST(TextCases, TheDispatcherKnowsTheThreeKinds) {
  OMNIDP_REQUIRE_FIXTURES();
  for (const char* kind : {"umt5_encoder", "byt5_encoder", "qwen25vl_text"}) {
    EXPECT_EQ(identify_case(kRef / kind, case_json(kRef / kind)), kind);
    EXPECT_TRUE(static_cast<bool>(find_runner(kind))) << kind;
  }
}

// A copy of a case whose expected output no longer matches its inputs must FAIL.
TEST(TextCases, AChangedInputFails) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto src = kRef / "umt5_encoder";
  const auto dir =
      fs::temp_directory_path() / ("omnidp-textcase-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  for (const char* f : {"case.json", "config.json", "model.safetensors"})
    fs::copy_file(src / f, dir / f);
  const models::SafetensorsFile io(src / "io.safetensors");
  auto ids = io.tensor("input_ids");
  ids[0][0] = ids[0][0].item<float>() == 5.0F ? 6.0F : 5.0F;
  models::save_safetensors(dir / "io.safetensors",
                           {{"input_ids", ids},
                            {"attention_mask", io.tensor("attention_mask")},
                            {"last_hidden_state", io.tensor("last_hidden_state")}});
  const auto results = run_umt5_encoder(dir, case_json(dir), RefcheckOptions{});
  fs::remove_all(dir);
  ASSERT_EQ(results.size(), 1U);
  EXPECT_EQ(results[0].status, CaseResult::Status::fail);
}

}  // namespace
}  // namespace omnidp::refcheck

#include "omnidp/refcheck/refcheck.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::refcheck {
namespace {
namespace fs = std::filesystem;

const fs::path kFixtures = omnidp::test::fixtures_dir();

fs::path fresh_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir =
      fs::temp_directory_path() / ("omnidp-refcheck-" + std::string(info->name()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

TEST(Identify, ByCaseJsonThenFolderName) {
  const auto id = [](const char* folder, const char* json) {
    return identify_case(folder, nlohmann::json::parse(json));
  };
  EXPECT_EQ(id("x", R"j({"what": "torch.randn(shape, ...)"})j"), "rng");
  EXPECT_EQ(id("x", R"({"euler": "..."})"), "schedulers");
  EXPECT_EQ(id("x", R"({"model": "WanTransformer3DModel"})"), "wan_transformer");
  EXPECT_EQ(id("x", R"j({"model": "AutoencoderKLWan (Wan2.2 layout)"})j"), "wan_vae");
  EXPECT_EQ(id("x", R"j({"pipeline": "WanPipeline(expand_timesteps=True) = ..."})j"),
            "wan_pipeline_t2v");
  EXPECT_EQ(id("x", R"j({"pipeline": "WanImageToVideoPipeline(expand_timesteps=True)"})j"),
            "wan_pipeline_i2v");
  EXPECT_EQ(id("x", R"j({"model": "T5EncoderModel (T5 v1.1)"})j"), "byt5_encoder");
  EXPECT_EQ(id("x", R"({"model": "UMT5EncoderModel"})"), "umt5_encoder");
  EXPECT_EQ(id("x", R"({"model": "AutoencoderKLHunyuanVideo15"})"), "hv15_vae");
  EXPECT_EQ(id("x", R"j({"pipeline": "HunyuanVideo15Pipeline (text-to-video)"})j"),
            "hv15_pipeline_t2v");
  EXPECT_EQ(id("x", R"j({"pipeline": "HunyuanVideo15ImageToVideoPipeline (image-to-video)"})j"),
            "hv15_pipeline_i2v");
  EXPECT_EQ(id("x", R"({"model": "AutoencoderKLWanX"})"), "");  // whole words only
  EXPECT_EQ(id("rng_cpu_randn", R"({"note": "?"})"), "rng");
  EXPECT_EQ(id("mystery", R"({"model": "SomethingElse"})"), "");
}

TEST(Dispatcher, FixtureBasicCasesPass) {
  OMNIDP_REQUIRE_FIXTURES();
  RefcheckOptions options;
  std::ostringstream out;
  auto summary = run_refcheck(kFixtures / "diffusers-ref" / "rng_cpu_randn", options, out);
  EXPECT_EQ(summary.cases, 1);
  EXPECT_EQ(summary.pass, 6) << out.str();
  EXPECT_EQ(summary.fail, 0) << out.str();
  EXPECT_NE(out.str().find("rng_cpu_randn/randn_seed42_1000"), std::string::npos) << out.str();

  out.str("");
  summary = run_refcheck(kFixtures / "diffusers-ref" / "schedulers", options, out);
  // euler: sigmas + timesteps for n = 4, 30, 50; unipc: the same and a trajectory each.
  EXPECT_EQ(summary.pass, 15) << out.str();
  EXPECT_EQ(summary.fail, 0) << out.str();
  EXPECT_NE(out.str().find("schedulers/unipc_shift5_n50_trajectory"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("50/50 steps"), std::string::npos) << out.str();
}

TEST(Dispatcher, FilterSelectsCases) {
  OMNIDP_REQUIRE_FIXTURES();
  RefcheckOptions options;
  options.filter = "diffusers-ref/sch";
  std::ostringstream out;
  const auto summary = run_refcheck(kFixtures, options, out);
  EXPECT_EQ(summary.cases, 1) << out.str();  // only diffusers-ref/schedulers matches the filter
  EXPECT_EQ(summary.fail, 0) << out.str();
  for (const auto& r : summary.results) EXPECT_EQ(r.case_name, "diffusers-ref/schedulers");
}

// Copies the rng case, corrupts one value of one expected tensor: that check FAILs, the rest
// still PASS, and the executable exits non-zero.
TEST(Dispatcher, CorruptedExpectedTensorFails) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto root = fresh_dir("corrupt");
  const auto src = kFixtures / "diffusers-ref" / "rng_cpu_randn";
  fs::create_directories(root / "rng");
  fs::copy_file(src / "case.json", root / "rng" / "case.json");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  {
    const models::SafetensorsFile io(src / "io.safetensors");
    for (const auto& name : io.names()) {
      auto t = io.tensor(name);
      if (name == "randn_seed1234_1000") t[17] += 1e-3F;
      tensors.emplace_back(name, t);
    }
  }
  models::save_safetensors(root / "rng" / "io.safetensors", tensors);

  std::ostringstream out;
  const auto summary = run_refcheck(root, RefcheckOptions{}, out);
  EXPECT_EQ(summary.fail, 1) << out.str();
  EXPECT_EQ(summary.pass, 5) << out.str();
  EXPECT_NE(out.str().find("rng/randn_seed1234_1000"), std::string::npos);
  for (const auto& r : summary.results) {
    if (r.check == "randn_seed1234_1000") {
      EXPECT_EQ(r.status, CaseResult::Status::fail);
      EXPECT_GT(r.max_rel_error, 0.0);
      EXPECT_NE(format_result(r).find("FAIL"), std::string::npos);
    }
  }

  const std::string cmd = std::string("\"") + OMNIDP_BINARY_DIR + "/bin/omni-dp-refcheck\" \"" +
                          root.string() + "\" > \"" + (root / "out.txt").string() + "\" 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << cmd;
  EXPECT_EQ(WEXITSTATUS(status), 1) << cmd;
  std::ifstream in(root / "out.txt");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  EXPECT_NE(text.find("FAIL"), std::string::npos) << text;
  EXPECT_NE(text.find("1 cases: 5 PASS, 1 FAIL, 0 SKIP"), std::string::npos) << text;
}

TEST(Dispatcher, UnknownKindSkipsAndBrokenCaseFails) {
  const auto root = fresh_dir("unknown");
  fs::create_directories(root / "a_new_model");
  write_text(root / "a_new_model" / "case.json", R"({"model": "FancyNewModel3D"})");
  fs::create_directories(root / "nested" / "broken");
  write_text(root / "nested" / "broken" / "case.json", "{not json");
  fs::create_directories(root / "nested" / "no_io");
  write_text(root / "nested" / "no_io" / "case.json", R"j({"what": "torch.randn(...)"})j");

  std::ostringstream out;
  const auto summary = run_refcheck(root, RefcheckOptions{}, out);
  EXPECT_EQ(summary.cases, 3);
  EXPECT_EQ(summary.skip, 1) << out.str();
  EXPECT_EQ(summary.fail, 2) << out.str();
  const auto text = out.str();
  EXPECT_NE(text.find("a_new_model"), std::string::npos);
  EXPECT_NE(text.find("SKIP  # unknown case kind"), std::string::npos) << text;
  EXPECT_NE(text.find("nested/broken/error"), std::string::npos) << text;
  EXPECT_NE(text.find("invalid JSON"), std::string::npos) << text;
  EXPECT_NE(text.find("nested/no_io/error"), std::string::npos) << text;
  EXPECT_NE(text.find("io.safetensors"), std::string::npos) << text;

  // Only the unknown case: exit 0 (SKIP is not a failure) unless --fail-on-skip.
  fs::remove_all(root / "nested");
  const std::string bin =
      std::string("\"") + OMNIDP_BINARY_DIR + "/bin/omni-dp-refcheck\" \"" + root.string() + "\"";
  int status = std::system((bin + " > /dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  status = std::system((bin + " --fail-on-skip > /dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
}

// tests/fixtures' cases name files of the shared set ("../hv15_transformer_i2v/..."): without
// them beside the case it is skipped with what it needs, not failed by a loader.
TEST(Dispatcher, ACaseNamingFilesOfAnotherRootSkipsWithWhatItNeeds) {
  const auto root = fresh_dir("split");
  fs::create_directories(root / "direct");
  write_text(root / "direct" / "case.json",
             R"j({"what": "torch.randn(...)", "vae": "../elsewhere_vae"})j");
  fs::create_directories(root / "nested");
  write_text(root / "nested" / "case.json",
             R"j({"what": "torch.randn(...)", "transformer": "../two_shards"})j");
  fs::create_directories(root / "two_shards");
  write_text(root / "two_shards" / "case.json",
             R"j({"transformer_shard_1": "../gone/diffusion_pytorch_model.safetensors"})j");
  write_text(root / "two_shards" / "diffusion_pytorch_model.safetensors.index.json",
             R"j({"weight_map": {"w": "diffusion_pytorch_model-00001-of-00002.safetensors"}})j");

  std::ostringstream out;
  const auto summary = run_refcheck(root, RefcheckOptions{}, out);
  const auto text = out.str();
  EXPECT_EQ(summary.fail, 0) << text;
  EXPECT_EQ(summary.skip, 3) << text;  // two_shards itself is of no known kind
  // Where the shard is, the case runs (and fails here: it has no io.safetensors).
  fs::create_directories(root / "gone");
  write_text(root / "gone" / "diffusion_pytorch_model.safetensors", "");
  std::ostringstream again;
  EXPECT_EQ(run_refcheck(root / "nested", RefcheckOptions{}, again).fail, 1) << again.str();
  EXPECT_NE(text.find("needs ../elsewhere_vae, which this fixture root lacks"), std::string::npos)
      << text;
  EXPECT_NE(text.find("needs ../two_shards's ../gone/diffusion_pytorch_model.safetensors, which "
                      "this fixture root lacks"),
            std::string::npos)
      << text;
}

TEST(Dispatcher, NotAFolderIsIoError) {
  EXPECT_THROW((void)run_refcheck(kFixtures / "does-not-exist", RefcheckOptions{}, std::cout),
               IoError);
}

}  // namespace
}  // namespace omnidp::refcheck

#include "omnidp/refcheck/hv15_cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/refcheck/refcheck.hpp"
#include "temp_dir.hpp"

namespace omnidp::refcheck {
namespace {

namespace fs = std::filesystem;

const fs::path kRef = omnidp::test::fixture("diffusers-ref");

TEST(Hv15Cases, TransformerFixturePassesMaskedAndDropped) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results =
      run_hv15_transformer(kRef / "hv15_transformer", nlohmann::json::object(), RefcheckOptions{});
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[0].check, "out");
  EXPECT_EQ(results[1].check, "out_drop_padding");
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::pass)
        << r.check << " " << r.max_rel_error << " " << r.note;
    EXPECT_DOUBLE_EQ(r.tolerance, 1e-4);
  }
}

TEST(Hv15Cases, VaeFixtureDecodePasses) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_case(kRef / "hv15_vae", "hv15_vae", RefcheckOptions{});
  ASSERT_EQ(results.size(), 1U);
  EXPECT_EQ(results[0].check, "decoded");
  EXPECT_EQ(results[0].status, CaseResult::Status::pass)
      << results[0].max_rel_error << " " << results[0].note;
}

TEST(Hv15Cases, DispatcherRecognisesTheTransformerCase) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_case(kRef / "hv15_transformer", "hv15_transformer", RefcheckOptions{});
  ASSERT_EQ(results.size(), 2U);
  for (const auto& r : results)
    EXPECT_EQ(r.status, CaseResult::Status::pass) << r.check << ": " << r.note;
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

nlohmann::json case_json(const fs::path& dir) {
  std::ifstream in(dir / "case.json");
  return nlohmann::json::parse(in);
}

std::vector<std::string> checks_of(const std::vector<CaseResult>& results) {
  std::vector<std::string> names;
  for (const auto& r : results) names.push_back(r.check);
  return names;
}

TEST(Hv15Cases, PipelineTextToVideoMatchesTheReference) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "hv15_pipeline_t2v";
  const auto results = run_case(dir, "hv15_pipeline_t2v", RefcheckOptions{});
  EXPECT_EQ(checks_of(results),
            (std::vector<std::string>{"noise_from_seed", "final_latents", "video", "video_uint8"}));
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::pass)
        << r.check << " err " << r.max_rel_error << " " << r.note;
  }
}

TEST(Hv15Cases, PipelineTextToVideoCaseMustAgreeWithItsConfigs) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "hv15_pipeline_t2v";
  auto j = case_json(dir);
  j["guidance_scale"] = 1.0;
  try {
    (void)run_hv15_pipeline_t2v(dir, j, RefcheckOptions{});
    FAIL() << "a case.json guidance_scale the guider config contradicts was accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("'guidance_scale' = 1.000000 but"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("guider_config.json says 6.000000"), std::string::npos)
        << e.what();
  }
  j = case_json(dir);
  j["latents_seed"] =
      1;  // the noise no longer is the reference's: the noise check and the outputs fail
  const auto results = run_hv15_pipeline_t2v(dir, j, RefcheckOptions{});
  ASSERT_EQ(results.size(), 4U);
  for (const auto& r : results) {
    if (r.check != "video_uint8") {
      EXPECT_EQ(r.status, CaseResult::Status::fail) << r.check;
    }
  }
}

TEST(Hv15Cases, PipelineImageToVideoSizeAndNoiseWithoutAnImageEncoder) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "hv15_pipeline_i2v";
  const auto results = run_hv15_pipeline_i2v(dir, case_json(dir), RefcheckOptions{});
  EXPECT_EQ(checks_of(results), (std::vector<std::string>{"size_from_image", "noise_from_seed",
                                                          "final_latents", "video"}));
  ASSERT_EQ(results.size(), 4U);
  EXPECT_EQ(results[0].status, CaseResult::Status::pass) << results[0].note;
  EXPECT_EQ(results[0].note, "ours 64x64, case.json 64x64");
  EXPECT_EQ(results[1].status, CaseResult::Status::pass);
  for (std::size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(results[i].status, CaseResult::Status::skip);
    EXPECT_EQ(results[i].note, "needs the SigLIP image encoder");
  }
  // A case.json size the bucket rule does not give fails the size check.
  auto j = case_json(dir);
  j["width"] = 96;
  const auto wrong = run_hv15_pipeline_i2v(dir, j, RefcheckOptions{});
  EXPECT_EQ(wrong[0].status, CaseResult::Status::fail);
  EXPECT_EQ(wrong[0].note, "ours 64x64, case.json 64x96");
}

// Through the dispatcher the case runs with the SigLIP image encoder and processor of the
// folders case.json names (the reference's image_encoder + feature_extractor): every check
// passes, the denoising and decode included.
TEST(Hv15Cases, PipelineImageToVideoWithSiglipPasses) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto results = run_case(kRef / "hv15_pipeline_i2v", "hv15_pipeline_i2v", RefcheckOptions{});
  EXPECT_EQ(checks_of(results), (std::vector<std::string>{"size_from_image", "noise_from_seed",
                                                          "final_latents", "video", "video_uint8"}));
  for (const auto& r : results)
    EXPECT_EQ(r.status, CaseResult::Status::pass) << r.check << ": " << r.note;
}

// Tokens that are not SigLIP's: the loader is used (on the folders named by case.json, with
// the resized 64 x 64 image) and the outputs then differ from the reference.
class ConstantImageEncoder final : public models::ImageEncoder {
 public:
  explicit ConstantImageEncoder(std::vector<RgbImage>* seen) : seen_(seen) {}
  torch::Tensor encode(const RgbImage& image) override {
    seen_->push_back(image);
    return torch::full({1, 16, 32}, 0.5);
  }

 private:
  std::vector<RgbImage>* seen_;
};

TEST(Hv15Cases, PipelineImageToVideoTakesTokensFromTheLoader) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto dir = kRef / "hv15_pipeline_i2v";
  std::vector<RgbImage> seen;
  std::vector<fs::path> dirs;
  const Hv15ImageEncoderLoader loader =
      [&](const fs::path& encoder, const fs::path& processor,
          const RefcheckOptions&) -> std::unique_ptr<models::ImageEncoder> {
    dirs = {encoder, processor};
    return std::make_unique<ConstantImageEncoder>(&seen);
  };
  const auto results = run_hv15_pipeline_i2v(dir, case_json(dir), RefcheckOptions{}, loader);
  EXPECT_EQ(checks_of(results), (std::vector<std::string>{"size_from_image", "noise_from_seed",
                                                          "final_latents", "video", "video_uint8"}));
  EXPECT_EQ(dirs, (std::vector<fs::path>{dir / "../siglip_vision", dir / "../siglip_vision"}));
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].width, 64);
  EXPECT_EQ(seen[0].height, 64);
  ASSERT_GE(results.size(), 3U);
  EXPECT_EQ(results[2].status, CaseResult::Status::fail);  // not the reference's tokens
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

// --- the released variants: cases of scripts/hv15_variant_fixtures.py -----------------------
//
// They live in the repository (tests/fixtures/diffusers-ref) and name the shared set's models as
// "../NAME"; a case is assembled in a temporary diffusers-ref/ folder: the case copied, each
// model it names linked from wherever fixture() finds it, and the MeanFlow transformer's shard 1
// (its case.json's transformer_shard_1) linked to the shared hv15_transformer_i2v file.

constexpr const char* kGenerator =
    "PYTHONPATH=<diffusers>/src python3 scripts/hv15_variant_fixtures.py --out "
    "tests/fixtures/diffusers-ref";

// Empty when the case folder exists; else the skip message naming the generator.
std::string missing_variant_case(const std::string& name) {
  std::error_code ec;
  if (fs::is_directory(omnidp::test::fixture("diffusers-ref/" + name), ec)) return {};
  return "diffusers-ref/" + name + " not generated yet: run " + kGenerator +
         " (scripts/hv15_variant_fixtures.py, on a machine with torch and diffusers)";
}

#define OMNIDP_REQUIRE_VARIANT_CASE(name)                                                  \
  do {                                                                                     \
    OMNIDP_REQUIRE_FIXTURES();                                                             \
    if (const auto omnidp_missing_ = missing_variant_case(name); !omnidp_missing_.empty()) \
      GTEST_SKIP() << omnidp_missing_;                                                     \
  } while (false)

// The MeanFlow transformer: its repository folder copied, the shard its index names but the
// folder lacks linked to the shared file transformer_shard_1 names.
void assemble_meanflow_transformer(const fs::path& ref, const std::string& name) {
  const auto src = omnidp::test::fixture("diffusers-ref/" + name);
  fs::copy(src, ref / name, fs::copy_options::recursive);
  const auto shard_1 = case_json(src).at("transformer_shard_1").get<std::string>();
  const auto index =
      models::read_json(ref / name / "diffusion_pytorch_model.safetensors.index.json");
  for (const auto& item : index.at("weight_map").items()) {
    const auto shard = ref / name / item.value().get<std::string>();
    if (fs::exists(shard)) continue;
    // "../hv15_transformer_i2v/diffusion_pytorch_model.safetensors" in the shared set.
    const auto target = omnidp::test::fixture(
        "diffusers-ref/" + fs::path(shard_1).lexically_relative("..").generic_string());
    fs::create_symlink(target, shard);
  }
}

void link_model(const fs::path& ref, const std::string& name) {
  if (fs::exists(ref / name)) return;
  if (name == "hv15_transformer_meanflow_i2v") {
    assemble_meanflow_transformer(ref, name);
  } else {
    fs::create_directory_symlink(omnidp::test::fixture("diffusers-ref/" + name), ref / name);
  }
}

// tmp/diffusers-ref/<name> ready to run: the case and every model it names.
fs::path assemble_variant_case(const fs::path& tmp, const std::string& name) {
  const auto ref = tmp / "diffusers-ref";
  fs::create_directories(ref);
  if (name == "hv15_transformer_meanflow_i2v") {
    assemble_meanflow_transformer(ref, name);
    return ref / name;
  }
  const auto src = omnidp::test::fixture("diffusers-ref/" + name);
  fs::copy(src, ref / name, fs::copy_options::recursive);
  const auto j = case_json(src);
  for (const char* key : {"transformer", "vae", "image_encoder", "feature_extractor"}) {
    if (j.contains(key))
      link_model(ref, fs::path(j.at(key).get<std::string>()).filename().string());
  }
  return ref / name;
}

void expect_all_pass(const std::vector<CaseResult>& results) {
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CaseResult::Status::pass)
        << r.check << " err " << r.max_rel_error << " " << r.note;
  }
}

// cfg-distilled (guider guidance_scale 1): the reference ran one transformer call per step and
// encoded no negative prompt (the case has none); ours matches call for call and output for output.
TEST(Hv15VariantCases, CfgDistilledTextToVideoMatchesDiffusers) {
  OMNIDP_REQUIRE_VARIANT_CASE("hv15_pipeline_cfg_distilled");
  omnidp::test::TempDir tmp;
  const auto dir = assemble_variant_case(tmp.path(), "hv15_pipeline_cfg_distilled");
  const auto j = case_json(dir);
  EXPECT_EQ(j.at("guidance_scale").get<double>(), 1.0);
  EXPECT_EQ(j.at("transformer_calls").get<int>(), j.at("steps").get<int>());
  EXPECT_FALSE(models::SafetensorsFile(dir / "io.safetensors").contains("negative_prompt_embeds"));
  const auto results = run_case(dir, "hv15_pipeline_cfg_distilled", RefcheckOptions{});
  EXPECT_EQ(checks_of(results), (std::vector<std::string>{"transformer_calls", "noise_from_seed",
                                                          "final_latents", "video", "video_uint8"}));
  expect_all_pass(results);
}

// The MeanFlow transformer: one forward with timestep_r matches; without it, it does not.
TEST(Hv15VariantCases, MeanflowTransformerTakesTimestepR) {
  OMNIDP_REQUIRE_VARIANT_CASE("hv15_transformer_meanflow_i2v");
  omnidp::test::TempDir tmp;
  const auto dir = assemble_variant_case(tmp.path(), "hv15_transformer_meanflow_i2v");
  const auto results = run_case(dir, "hv15_transformer_meanflow_i2v", RefcheckOptions{});
  EXPECT_EQ(checks_of(results), (std::vector<std::string>{"out", "out_drop_padding"}));
  expect_all_pass(results);
  const models::SafetensorsFile io(dir / "io.safetensors");
  ASSERT_TRUE(io.contains("timestep_r"));
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& name : io.names()) {
    if (name != "timestep_r") tensors.emplace_back(name, io.tensor(name));
  }
  fs::remove(dir / "io.safetensors");
  models::save_safetensors(dir / "io.safetensors", tensors);
  for (const auto& r : run_hv15_transformer(dir, case_json(dir), RefcheckOptions{}))
    EXPECT_EQ(r.status, CaseResult::Status::fail) << r.check << " " << r.max_rel_error;
}

// The step-distilled I2V: the reference's calls carry timestep_r = the next timestep (0 at the
// last step), in both CFG branches; ours matches them and the outputs (SigLIP from case.json's
// folders).
TEST(Hv15VariantCases, MeanflowImageToVideoMatchesDiffusers) {
  OMNIDP_REQUIRE_VARIANT_CASE("hv15_pipeline_meanflow_i2v");
  omnidp::test::TempDir tmp;
  const auto dir = assemble_variant_case(tmp.path(), "hv15_pipeline_meanflow_i2v");
  const auto results = run_case(dir, "hv15_pipeline_meanflow_i2v", RefcheckOptions{});
  EXPECT_EQ(checks_of(results),
            (std::vector<std::string>{"transformer_calls", "size_from_image", "noise_from_seed",
                                      "final_latents", "video", "video_uint8"}));
  expect_all_pass(results);
  const models::SafetensorsFile io(dir / "io.safetensors");
  const auto r = io.tensor("call_timestep_r");
  ASSERT_GE(r.size(0), 2);
  EXPECT_EQ(r[r.size(0) - 1].item<float>(), 0.0F);  // the last step's
}

}  // namespace
}  // namespace omnidp::refcheck

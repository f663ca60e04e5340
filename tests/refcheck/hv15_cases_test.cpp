#include "omnidp/refcheck/hv15_cases.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/weights/safetensors.hpp"

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

}  // namespace
}  // namespace omnidp::refcheck

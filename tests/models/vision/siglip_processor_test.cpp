#include "omnidp/models/vision/siglip_processor.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models::vision {
namespace {
namespace fs = std::filesystem;

const fs::path kCase = omnidp::test::fixture("diffusers-ref/siglip_vision");

RgbImage fixture_image() {
  const SafetensorsFile io(kCase / "io.safetensors");
  const auto t = io.tensor("image_rgb_uint8").round().to(torch::kUInt8).contiguous();  // [H, W, 3]
  RgbImage im;
  im.height = static_cast<int>(t.size(0));
  im.width = static_cast<int>(t.size(1));
  im.data.assign(t.data_ptr<std::uint8_t>(), t.data_ptr<std::uint8_t>() + t.numel());
  return im;
}

TEST(SiglipImageProcessorOptions, FromTheFixtureFolderAndFile) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto o = load_siglip_image_processor(kCase);
  EXPECT_TRUE(o.do_resize);
  EXPECT_EQ(o.height, 56);
  EXPECT_EQ(o.width, 56);
  EXPECT_EQ(o.resample, ResampleFilter::bicubic);
  EXPECT_TRUE(o.do_rescale);
  EXPECT_DOUBLE_EQ(o.rescale_factor, 1.0 / 255.0);
  EXPECT_TRUE(o.do_normalize);
  EXPECT_EQ(o.image_mean, (std::array<double, 3>{0.5, 0.5, 0.5}));
  EXPECT_EQ(o.image_std, (std::array<double, 3>{0.5, 0.5, 0.5}));
  EXPECT_EQ(o.convention, ResizeConvention::torch);  // image_processor_type SiglipImageProcessor
  EXPECT_EQ(load_siglip_image_processor(kCase / "preprocessor_config.json").height, 56);
}

TEST(SiglipImageProcessor, PixelValuesAreBitExactWithTransformers) {
  OMNIDP_REQUIRE_FIXTURES();
  const SafetensorsFile io(kCase / "io.safetensors");
  const auto ref = io.tensor("pixel_values");
  const auto ours = siglip_preprocess(fixture_image(), load_siglip_image_processor(kCase));
  ASSERT_EQ(ours.sizes(), ref.sizes());
  EXPECT_EQ(ours.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(ours, ref)) << (ours - ref).abs().max().item<double>();
}

// Pillow's 22-bit taps round a few bytes of this 90x70 -> 56x56 downscale the other way:
// the PIL backend gives other pixel_values (by one uint8 step, 2/255 after normalising).
TEST(SiglipImageProcessor, ThePillowConventionDiffersByOneStepSomewhere) {
  OMNIDP_REQUIRE_FIXTURES();
  const SafetensorsFile io(kCase / "io.safetensors");
  const auto ref = io.tensor("pixel_values");
  auto o = load_siglip_image_processor(kCase);
  o.convention = ResizeConvention::pillow;
  const auto diff = (siglip_preprocess(fixture_image(), o) - ref).abs();
  EXPECT_NEAR(diff.max().item<double>(), 2.0 / 255.0, 1e-6);
  const auto off = (diff > 1e-3).sum().item<std::int64_t>();
  EXPECT_GT(off, 0);
  EXPECT_LT(off, ref.numel() / 50);
}

TEST(SiglipImageProcessor, NormalisationArithmeticOfBothBackends) {
  RgbImage im;
  im.width = 2;
  im.height = 1;
  im.data = {0, 1, 128, 200, 254, 255};
  SiglipImageProcessorOptions o;
  o.do_resize = false;
  o.image_mean = {0.48145466, 0.4578275, 0.40821073};
  o.image_std = {0.26862954, 0.26130258, 0.27577711};
  const auto torch_out = siglip_preprocess(im, o);
  o.convention = ResizeConvention::pillow;
  const auto pil_out = siglip_preprocess(im, o);
  ASSERT_EQ(torch_out.sizes(), (std::vector<std::int64_t>{1, 3, 1, 2}));
  const float inv = static_cast<float>(1.0 / o.rescale_factor);
  for (int c = 0; c < 3; ++c) {
    for (int x = 0; x < 2; ++x) {
      const auto v = im.data[static_cast<std::size_t>(x * 3 + c)];
      const float mean = static_cast<float>(o.image_mean[static_cast<std::size_t>(c)]);
      const float std_dev = static_cast<float>(o.image_std[static_cast<std::size_t>(c)]);
      const float fused = (static_cast<float>(v) - mean * inv) / (std_dev * inv);
      const float numpy =
          (static_cast<float>(static_cast<double>(v) * o.rescale_factor) - mean) / std_dev;
      EXPECT_EQ(torch_out[0][c][0][x].item<float>(), fused) << c << "," << x;
      EXPECT_EQ(pil_out[0][c][0][x].item<float>(), numpy) << c << "," << x;
    }
  }
}

std::string error_of(const nlohmann::json& config) {
  try {
    (void)SiglipImageProcessorOptions::from_json(
        config, "/snap/feature_extractor/preprocessor_config.json");
  } catch (const WeightsError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SiglipImageProcessorOptions, BadValuesNameTheFileAndTheKey) {
  OMNIDP_REQUIRE_FIXTURES();
  const auto base = read_json(kCase / "preprocessor_config.json");
  auto c = base;
  c["size"] = {{"shortest_edge", 384}};
  EXPECT_NE(error_of(c).find("/snap/feature_extractor/preprocessor_config.json"), std::string::npos)
      << error_of(c);
  EXPECT_NE(error_of(c).find("key 'size' must be"), std::string::npos) << error_of(c);
  c = base;
  c["resample"] = 0;
  EXPECT_NE(error_of(c).find("key 'resample' resample 0 is not supported"), std::string::npos)
      << error_of(c);
  c = base;
  c["resample"] = 1;  // lanczos: the torchvision backend has none
  EXPECT_NE(error_of(c).find("key 'resample' is 1 (lanczos)"), std::string::npos) << error_of(c);
  c = base;
  c["image_processor_type"] = "CLIPImageProcessor";
  EXPECT_NE(error_of(c).find("key 'image_processor_type' is \"CLIPImageProcessor\""), std::string::npos)
      << error_of(c);
  c = base;
  c["image_std"] = {0.5, 0.0, 0.5};
  EXPECT_NE(error_of(c).find("key 'image_std' must be finite and non-zero"), std::string::npos)
      << error_of(c);
  c = base;
  c["image_mean"] = {0.5, 0.5};
  EXPECT_NE(error_of(c).find("key 'image_mean' must be a number or a list of 3 numbers"),
            std::string::npos)
      << error_of(c);
  c = base;
  c["do_normalize"] = "yes";
  EXPECT_NE(error_of(c).find("key 'do_normalize' must be true or false"), std::string::npos)
      << error_of(c);
  c = base;
  c["rescale_factor"] = -1;
  EXPECT_NE(error_of(c).find("key 'rescale_factor' must be a positive number"), std::string::npos)
      << error_of(c);
  c = base;
  c["image_processor_type"] = "SiglipImageProcessorPil";
  c["resample"] = 1;
  const auto pil = SiglipImageProcessorOptions::from_json(c, "x");
  EXPECT_EQ(pil.convention, ResizeConvention::pillow);
  EXPECT_EQ(pil.resample, ResampleFilter::lanczos);
}

}  // namespace
}  // namespace omnidp::models::vision

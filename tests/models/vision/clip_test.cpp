#include "omnidp/models/vision/clip.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "error_of.hpp"
#include "fixtures.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/video_frames.hpp"
#include "omnidp/models/weights/safetensors.hpp"

namespace omnidp::models::vision {
namespace {
namespace fs = std::filesystem;

// The repository's case (scripts/wan_family_fixtures.py): transformers 5.17 CLIPVisionModel and
// CLIPImageProcessor at 32 px, patch 8, 3 layers; always there.
const fs::path kCase = omnidp::test::fixture("diffusers-ref/clip_vision");

double max_rel_error(const torch::Tensor& ours, const torch::Tensor& ref) {
  const auto a = ours.to(torch::kCPU, torch::kFloat64);
  const auto b = ref.to(torch::kCPU, torch::kFloat64);
  return (a - b).abs().max().item<double>() / std::max(1.0, b.abs().max().item<double>());
}

RgbImage fixture_image(const SafetensorsFile& io) {
  return image_from_pixels(io.tensor("image_rgb_uint8"));
}

TEST(ClipVision, ProcessorAndPenultimateHiddenStateAreTransformers) {
  const SafetensorsFile io(kCase / "io.safetensors");
  const auto file = kCase / "preprocessor_config.json";
  const auto processor = ClipImageProcessorOptions::from_json(read_json(file), file.string());
  EXPECT_EQ(processor.shortest_edge, 32);
  EXPECT_EQ(processor.crop_width, 32);
  const auto pixels = clip_preprocess(fixture_image(io), processor);  // 48 x 32, cropped 8 | 8
  ASSERT_EQ(pixels.sizes(), io.tensor("pixel_values").sizes());
  EXPECT_LE(max_rel_error(pixels, io.tensor("pixel_values")), 1e-6);

  const auto model = load_clip_vision(kCase, torch::kFloat32, torch::kCPU);
  EXPECT_EQ(model->options().hidden_act, "gelu");
  c10::InferenceMode inference;
  const auto hidden = model->penultimate_hidden_state(io.tensor("pixel_values"));
  const auto expected = io.tensor("penultimate_hidden_state");
  ASSERT_EQ(hidden.sizes(), expected.sizes());  // [1, 17, 32]: the class token and 16 patches
  EXPECT_LE(max_rel_error(hidden, expected), 1e-4);
  // The last layer is not run: hidden_states[-1] would differ.
  EXPECT_THROW((void)model->penultimate_hidden_state(torch::zeros({1, 3, 16, 16})), ModelError);
}

// The ImageEncoder Wan2.1 I2V runs: the processor, then hidden_states[-2], from the two folders.
TEST(ClipVision, TheImageEncoderIsTheProcessorThenThePenultimateHiddenState) {
  const SafetensorsFile io(kCase / "io.safetensors");
  const auto encoder = load_clip_image_encoder(kCase, kCase, torch::kFloat32, torch::kCPU);
  EXPECT_EQ(encoder->tokens(), 17);
  c10::InferenceMode inference;
  const auto tokens = encoder->encode(fixture_image(io));
  const auto expected = io.tensor("penultimate_hidden_state");
  ASSERT_EQ(tokens.sizes(), expected.sizes());
  EXPECT_LE(max_rel_error(tokens, expected), 1e-4);
  const auto missing = fs::path(::testing::TempDir()) / "no_processor";
  fs::create_directories(missing);
  EXPECT_NE(omnidp::test::error_of<WeightsError>([&] {
              (void)load_clip_image_encoder(kCase, missing, torch::kFloat32, torch::kCPU);
            }).find("no_processor/preprocessor_config.json"),
            std::string::npos);
}

TEST(ClipVision, ConfigDefaultsAreClipsAndBadKeysAreNamed) {
  const auto o = clip_vision_options({{"hidden_size", 64},
                                      {"intermediate_size", 128},
                                      {"num_hidden_layers", 2},
                                      {"num_attention_heads", 4},
                                      {"image_size", 224},
                                      {"patch_size", 14}},
                                     "c.json");
  EXPECT_EQ(o.hidden_act, "quick_gelu");
  EXPECT_DOUBLE_EQ(o.layer_norm_eps, 1e-5);
  EXPECT_FALSE(o.use_head);
  EXPECT_EQ(
      omnidp::test::error_of<WeightsError>([] {
        (void)clip_vision_options({{"model_type", "siglip_vision_model"}}, "c.json");
      }),
      "c.json: CLIP: key 'model_type' is 'siglip_vision_model', expected 'clip_vision_model'");
  EXPECT_EQ(omnidp::test::error_of<WeightsError>([] {
              (void)ClipImageProcessorOptions::from_json({{"size", {{"height", 3}}}}, "p.json");
            }),
            "p.json: CLIP: key 'size' must be {\"shortest_edge\": N}, got {\"height\":3}");
}

// Odd margins: torchvision's center crop rounds half the margin to even.
TEST(ClipVision, CenterCropOffsetsFollowTheConvention) {
  ClipImageProcessorOptions o;
  o.shortest_edge = 0;  // no resize
  o.crop_height = 1;
  o.crop_width = 1;
  o.normalize.do_normalize = false;
  o.normalize.do_rescale = false;
  o.normalize.do_resize = false;
  RgbImage image;
  image.height = 1;
  image.width = 4;  // margin 3: torch takes column 2 (round(1.5) = 2), numpy column 1
  image.data = {0, 0, 0, 10, 10, 10, 20, 20, 20, 30, 30, 30};
  EXPECT_EQ(clip_preprocess(image, o)[0][0][0][0].item<float>(), 20.0F);
  o.normalize.convention = ResizeConvention::pillow;
  EXPECT_EQ(clip_preprocess(image, o)[0][0][0][0].item<float>(), 10.0F);
}

}  // namespace
}  // namespace omnidp::models::vision

// The model FLOPs of Wan2.2 requests (docs/performance.md, "MFU"). The expected figures were
// computed by hand from the Diffusers module structure (an independent script, not this code):
// per stage output positions x input channels x output channels x kernel taps, x 2.
#include "omnidp/models/wan/flops.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"
#include "omnidp/models/text/flops.hpp"
#include "omnidp/models/wan/configs.hpp"

namespace omnidp::models::wan {
namespace {

WanTransformerOptions five_b() {
  return WanTransformerOptions::from_json_text(wan22_ti2v_5b_transformer_config(), "5b");
}
WanTransformerOptions tiny() {
  return WanTransformerOptions::from_json_text(tiny_wan_transformer_config(), "tiny");
}
AutoencoderKLWanOptions tiny_vae() {
  return AutoencoderKLWanOptions::from_json_text(tiny_wan_vae_config(), "tiny vae");
}

// UMT5-XXL (Wan2.2's text_encoder/config.json): 24 layers, 4096 = 64 x 64, FFN 10240 gated.
text::T5Options umt5_xxl() {
  text::T5Options o{.d_model = 4096,
                    .d_kv = 64,
                    .d_ff = 10240,
                    .num_layers = 24,
                    .num_heads = 64,
                    .is_gated_act = true};
  return o;
}

TEST(WanFlops, VaeDecodeOfTheRealVaeAt832x480x33) {
  // 9 latent frames of 30 x 52 -> 33 frames of 240 x 416 (then unpatchified to 480 x 832).
  EXPECT_EQ(wan_vae_decode_flops(AutoencoderKLWanOptions::wan22_ti2v_5b(), 9, 30, 52),
            244254110330880.0);
}

TEST(WanFlops, VaeDecodeOfTinyWan) {
  EXPECT_EQ(wan_vae_decode_flops(tiny_vae(), 2, 2, 4), 439164928.0);
  // One latent frame: no temporal upsampling conv runs at all.
  EXPECT_EQ(wan_vae_decode_flops(tiny_vae(), 1, 2, 4), 93310976.0);
  EXPECT_THROW((void)wan_vae_decode_flops(tiny_vae(), 0, 2, 4), ModelError);
}

TEST(WanFlops, VaeEncodeOfAnImage) {
  EXPECT_EQ(wan_vae_encode_image_flops(AutoencoderKLWanOptions::wan22_ti2v_5b(), 480, 832),
            1860758814720.0);
  EXPECT_THROW((void)wan_vae_encode_image_flops(tiny_vae(), 40, 64), ModelError);
}

// The 36-channel image-to-video models encode the whole conditioning video: the first frame as
// the image alone, then 4 frames per latent frame through the temporal convs.
TEST(WanFlops, VaeEncodeOfAConditioningVideo) {
  const auto vae = AutoencoderKLWanOptions::wan21();
  const double image = wan_vae_encode_image_flops(vae, 480, 832);
  EXPECT_EQ(wan_vae_encode_flops(vae, 1, 480, 832), image);
  EXPECT_EQ(wan_vae_encode_flops(vae, 4, 480, 832), image);  // 1 + 4k frames are encoded
  const double video = wan_vae_encode_flops(vae, 81, 480, 832);
  EXPECT_GT(video, 40.0 * image);  // the full-resolution levels see all 81 frames
  EXPECT_LT(video, 81.0 * image);  // the downsampled ones fewer
}

// Wan2.2-TI2V-5B t2v at 832x480x33, 30 steps, CFG: the transformer part is exactly
// wan_forward_flops(3510 tokens, 512 text tokens) x 30 steps x 2 branches.
TEST(WanFlops, RequestOfTheRealModelAt832x480x33) {
  WanFlopsInputs in{
      .num_frames = 33,
      .height = 480,
      .width = 832,
      .num_inference_steps = 30,
      .cfg = true,
      .text_flops = text::t5_encoder_flops(umt5_xxl(), 7) + text::t5_encoder_flops(umt5_xxl(), 1)};
  const auto vae = AutoencoderKLWanOptions::wan22_ti2v_5b();
  const RequestFlops f = wan_request_flops(five_b(), vae, in);
  EXPECT_EQ(wan_forward_flops(five_b(), 3510, 512), 36258547138560.0);
  EXPECT_EQ(f.transformer, wan_forward_flops(five_b(), 3510, 512) * 30 * 2);
  EXPECT_EQ(f.transformer, 2175512828313600.0);
  EXPECT_EQ(f.vae, 244254110330880.0);
  EXPECT_EQ(f.text, in.text_flops);
  EXPECT_EQ(f.image, 0.0);
  EXPECT_EQ(f.total(), f.transformer + f.vae + f.text);
  // Without CFG one forward per step; i2v adds the image's VAE encode.
  in.cfg = false;
  in.i2v = true;
  const RequestFlops g = wan_request_flops(five_b(), vae, in);
  EXPECT_EQ(g.transformer, 36258547138560.0 * 30);
  EXPECT_EQ(g.vae, 244254110330880.0 + 1860758814720.0);
}

// tiny-wan's test request (5 frames of 32 x 64, 3 steps, CFG): 4 video tokens.
TEST(WanFlops, RequestOfTinyWan) {
  WanFlopsInputs in{
      .num_frames = 5, .height = 32, .width = 64, .num_inference_steps = 3, .cfg = true};
  const RequestFlops f = wan_request_flops(tiny(), tiny_vae(), in);
  EXPECT_EQ(f.transformer, 3.0 * 2.0 * wan_forward_flops(tiny(), 4, 512));
  EXPECT_EQ(f.transformer, 427917312.0);
  EXPECT_EQ(f.vae, 439164928.0);
}

TEST(WanForwardFlops, MatchesTheDocumentedFormulaAndFigures) {
  const auto o = WanTransformerOptions::from_json_text(wan22_ti2v_5b_transformer_config(), "5b");
  const double n = 3510, d = 3072, f = 14336;
  const double expected =
      30 * (2 * n * (6 * d * d + 2 * d * f) + 4 * n * n * d + 4 * n * 512 * d + 4 * 512 * d * d);
  EXPECT_DOUBLE_EQ(wan_forward_flops(o, 3510, 512), expected);
  // The goals' table: 0.1039 s <-> 349 TFLOP/s, 1.183 s at 27280 tokens <-> 437 TFLOP/s.
  EXPECT_NEAR(wan_forward_flops(o, 3510, 512) / 0.1039 / 1e12, 349.0, 1.0);
  EXPECT_NEAR(wan_forward_flops(o, 27280, 512) / 1.183 / 1e12, 437.0, 1.0);
  // Image tokens are one more cross-attention context: 257 CLIP tokens beside the 512.
  EXPECT_DOUBLE_EQ(wan_forward_flops(o, 3510, 512, 257), wan_forward_flops(o, 3510, 769));
}

}  // namespace
}  // namespace omnidp::models::wan

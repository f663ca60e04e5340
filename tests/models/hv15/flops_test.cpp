// The model FLOPs of HunyuanVideo-1.5 requests (docs/performance.md, "MFU"). The expected
// figures of the real configuration were computed by hand from the module structure (an
// independent script, not this code): per stage output positions x input channels x output
// channels x kernel taps, x 2.
#include "omnidp/models/hv15/flops.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"

namespace omnidp::models::hv15 {
namespace {

// The defaults are HunyuanVideo-1.5's 480p transformer and its VAE (docs/models.md).
TEST(Hv15Flops, ForwardIsTheBenchmarksJointAttentionCount) {
  const TransformerOptions o;
  const double s = 49290.0 + 256.0, d = 2048.0, f = 8192.0;
  EXPECT_EQ(hv15_forward_flops(o, 49290, 256),
            54.0 * (2 * s * (4 * d * d + 2 * d * f) + 4 * s * s * d));
  EXPECT_EQ(hv15_forward_flops(o, 49290, 256), 1355250709757952.0);
}

TEST(Hv15Flops, VaeOfTheRealModelAt848x480x121) {
  const VaeOptions v;
  // 31 latent frames of 30 x 53 -> 121 frames of 480 x 848.
  EXPECT_EQ(hv15_vae_decode_flops(v, 31, 30, 53), 1235217521049600.0);
  EXPECT_EQ(hv15_vae_encode_image_flops(v, 480, 848), 7015142277120.0);
  EXPECT_THROW((void)hv15_vae_decode_flops(v, 31, 0, 53), ModelError);
  EXPECT_THROW((void)hv15_vae_encode_image_flops(v, 480, 840), ModelError);
}

// t2v at 848x480x121, 50 steps, CFG on every step, 256 valid text tokens per branch.
TEST(Hv15Flops, RequestOfTheRealModel) {
  Hv15FlopsInputs in{.num_frames = 121,
                     .height = 480,
                     .width = 848,
                     .num_inference_steps = 50,
                     .cfg_steps = 50,
                     .text_tokens = 256,
                     .negative_text_tokens = 256,
                     .text_flops = 1.0e12};
  const RequestFlops f = hv15_request_flops(TransformerOptions{}, VaeOptions{}, in);
  EXPECT_EQ(f.transformer, 50 * 1355250709757952.0 + 50 * 1355250709757952.0);
  EXPECT_EQ(f.vae, 1235217521049600.0);
  EXPECT_EQ(f.text, 1.0e12);
  EXPECT_EQ(f.image, 0.0);
  // i2v: the image's tokens join both branches (done by the caller), plus the VAE encode.
  in.i2v = true;
  in.cfg_steps = 0;
  in.image_flops = 666448114176.0;
  const RequestFlops g = hv15_request_flops(TransformerOptions{}, VaeOptions{}, in);
  EXPECT_EQ(g.transformer, 50 * 1355250709757952.0);
  EXPECT_EQ(g.vae, 1235217521049600.0 + 7015142277120.0);
  EXPECT_EQ(g.image, 666448114176.0);
  EXPECT_EQ(g.total(), g.transformer + g.vae + g.text + g.image);
}

}  // namespace
}  // namespace omnidp::models::hv15

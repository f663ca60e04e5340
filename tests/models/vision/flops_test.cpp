// The SigLIP and CLIP vision towers' FLOPs (docs/performance.md, "MFU"), against a hand-computed figure.
#include "omnidp/models/vision/flops.hpp"

#include <gtest/gtest.h>

namespace omnidp::models::vision {
namespace {

// siglip-so400m-patch14-384 (HunyuanVideo-1.5's image_encoder/): 729 patches of 14 x 14 x 3,
// 27 layers of 1152, MLP 4304: 2 x 729 x 588 x 1152 + 27 x [2n(4d^2 + 2dI) + 4n^2 d].
TEST(VisionFlops, SiglipSo400m) {
  SiglipVisionOptions o{.hidden_size = 1152,
                        .intermediate_size = 4304,
                        .num_hidden_layers = 27,
                        .num_attention_heads = 16,
                        .image_size = 384,
                        .patch_size = 14};
  EXPECT_EQ(o.num_patches(), 729);
  EXPECT_EQ(siglip_vision_flops(o), 666448114176.0);
}

// CLIP ViT-H/14 (Wan2.1 I2V's image_encoder/), hidden_states[-2]: 256 patches of 14 x 14 x 3
// into 1280, then 31 of the 32 layers (MLP 5120) over 257 tokens (the class token):
// 2 x 256 x 588 x 1280 + 31 x [2 x 257 (4d^2 + 2dI) + 4 x 257^2 d].
TEST(VisionFlops, ClipVitH14Penultimate) {
  SiglipVisionOptions o{.hidden_size = 1280,
                        .intermediate_size = 5120,
                        .num_hidden_layers = 32,
                        .num_attention_heads = 16,
                        .image_size = 224,
                        .patch_size = 14};
  EXPECT_EQ(clip_vision_flops(o), 324143836160.0);
}

}  // namespace
}  // namespace omnidp::models::vision

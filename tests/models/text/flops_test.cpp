// The text encoders' FLOPs (docs/performance.md, "MFU"), against hand-computed figures.
#include "omnidp/models/text/flops.hpp"

#include <gtest/gtest.h>

#include "omnidp/models/text/prompt_encoders.hpp"

namespace omnidp::models::text {
namespace {

// UMT5-XXL (Wan2.2's text_encoder/config.json): 24 layers, 4096 = 64 x 64, FFN 10240 gated:
// 24 x [2n(4 x 4096 x 4096 + 3 x 4096 x 10240) + 4 n^2 x 4096].
TEST(TextFlops, Umt5XxlEncoder) {
  T5Options o{.d_model = 4096,
              .d_kv = 64,
              .d_ff = 10240,
              .num_layers = 24,
              .num_heads = 64,
              .is_gated_act = true};
  EXPECT_EQ(t5_encoder_flops(o, 512), 4844723109888.0);
  EXPECT_EQ(t5_encoder_flops(o, 7), 64846430208.0);
  o.is_gated_act = false;  // wi, wo only
  EXPECT_EQ(t5_encoder_flops(o, 1),
            24.0 * (2.0 * (4.0 * 4096 * 4096 + 2.0 * 4096 * 10240) + 4.0 * 4096));
}

// Qwen2.5-VL-7B's text model over 300 tokens through 26 of its 28 layers (hidden_states[-3]).
TEST(TextFlops, Qwen25VlTextModel) {
  const Qwen25VLTextOptions o;  // the 7B defaults
  EXPECT_EQ(qwen25vl_text_flops(o, 300, 26), 3669064089600.0);
  EXPECT_EQ(qwen25vl_text_flops(o, 300, 0), 0.0);
}

// tiny-wan's byte T5 counts the prompt's bytes plus </s>: "a cat" is 6 tokens, "" 1.
TEST(TextFlops, TinyByteT5CountsTheValidTokens) {
  const auto encoder = make_tiny_byte_t5(1, 32, torch::kFloat32, EncoderPlacement{});
  const auto o = tiny_byte_t5_options(32);
  const EncodeCost cat = encoder->encode_cost("a cat");
  EXPECT_EQ(cat.valid_tokens, 6);
  EXPECT_EQ(cat.valid_tokens_2, 0);
  EXPECT_EQ(cat.flops, t5_encoder_flops(o, 6));
  EXPECT_EQ(cat.flops, 2.0 * (2.0 * 6 * (4.0 * 32 * 32 + 3.0 * 32 * 64) + 4.0 * 36 * 32));
  EXPECT_EQ(encoder->encode_cost("").valid_tokens, 1);
  // encode() marks the same tokens valid.
  EXPECT_EQ(encoder->encode("a cat").mask.sum().item<std::int64_t>(), 6);
}

}  // namespace
}  // namespace omnidp::models::text

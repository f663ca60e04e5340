// The Wan family's original-name LoRA map: every original name (Kohya / ComfyUI / LightX2V)
// lands on a parameter of the transformer, and musubi-tuner's flattened names come back. The
// conversions against diffusers' own loader are LoraCases.* (the refcheck fixtures).
#include "omnidp/models/wan/lora_names.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "omnidp/models/wan/family.hpp"
#include "omnidp/models/wan/transformer.hpp"

namespace omnidp::models::wan {
namespace {

std::string with_index(const std::string& name) {
  const auto at = name.find("<N>");
  return at == std::string::npos ? name : name.substr(0, at) + "0" + name.substr(at + 3);
}

// Wan2.1-I2V's layout has every module the map names (added K/V, the image embedder, norm3).
TEST(WanLoraNames, EveryOriginalNameIsAModuleOfTheTransformer) {
  const auto layout = builtin_wan_layout("tiny-wan2.1-i2v");
  ASSERT_TRUE(layout.has_value());
  WanTransformer3DModel model(layout->transformer);
  const auto shapes = parameter_shapes(*model);
  const auto map = wan_lora_names();
  const auto originals = wan_lora_original_names();
  EXPECT_EQ(originals.size(), 29U);
  for (const auto& original : originals) {
    const auto name = map.module(with_index(original));
    ASSERT_TRUE(name.has_value()) << original;
    EXPECT_TRUE(shapes.contains(*name + ".weight")) << original << " -> " << *name;
  }
  for (const char* parameter : {"blocks.0.modulation", "head.modulation"}) {
    const auto name = map.parameter(parameter);
    ASSERT_TRUE(name.has_value()) << parameter;
    EXPECT_TRUE(shapes.contains(*name)) << parameter << " -> " << *name;
  }
  // First-last-frame checkpoints' image position embedding (not in this layout).
  EXPECT_EQ(map.parameter("img_emb.emb_pos"), "condition_embedder.image_embedder.pos_embed");
  EXPECT_EQ(map.module("blocks.17.cross_attn.k_img"), "blocks.17.attn2.add_k_proj");
  EXPECT_FALSE(map.module("blocks.0.self_attn.qkv").has_value());
}

TEST(WanLoraNames, MusubiNamesAreTheBlocksLayersFlattened) {
  const auto map = wan_lora_names();
  EXPECT_EQ(map.musubi("blocks_3_self_attn_q"), "blocks.3.self_attn.q");
  EXPECT_EQ(map.musubi("blocks_12_cross_attn_v_img"), "blocks.12.cross_attn.v_img");
  EXPECT_EQ(map.musubi("blocks_0_ffn_2"), "blocks.0.ffn.2");
  EXPECT_FALSE(map.musubi("blocks_0_norm3").has_value());  // musubi trains no norms
  EXPECT_FALSE(map.musubi("head_head").has_value());
}

}  // namespace
}  // namespace omnidp::models::wan

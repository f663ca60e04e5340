#include "omnidp/models/wan/family.hpp"

#include <gtest/gtest.h>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"

namespace omnidp::models::wan {
namespace {

using omnidp::test::error_of;

TEST(WanFamily, EachReleasedLayoutIsNamedByItsStructure) {
  for (const char* name : {"wan2.1-t2v-1.3b", "wan2.1-t2v-14b", "wan2.1-i2v-14b", "wan2.2-t2v-a14b",
                           "wan2.2-i2v-a14b", "wan2.2-ti2v-5b"}) {
    SCOPED_TRACE(name);
    const auto layout = builtin_wan_layout(name);
    ASSERT_TRUE(layout.has_value());
    EXPECT_EQ(wan_variant_name(*layout), name);
  }
  // Depth does not matter (snapshots with fewer layers); the width tells 1.3B from 14B only.
  auto a14b = *builtin_wan_layout("wan2.2-t2v-a14b");
  a14b.transformer.num_layers = a14b.transformer_2->num_layers = 2;
  EXPECT_EQ(wan_variant_name(a14b), "wan2.2-t2v-a14b");
  auto t2v = *builtin_wan_layout("wan2.1-t2v-14b");
  t2v.transformer.num_attention_heads = 24;  // 3072 wide: no released Wan2.1
  EXPECT_EQ(wan_variant_name(t2v), "");
}

TEST(WanFamily, TheReleasedLayoutsHaveTheReleasedShapes) {
  const auto a14b = *builtin_wan_layout("wan2.2-i2v-a14b");
  EXPECT_EQ(a14b.transformer.inner_dim(), 5120);
  EXPECT_EQ(a14b.transformer.num_layers, 40);
  EXPECT_EQ(a14b.transformer.ffn_dim, 13824);
  EXPECT_EQ(a14b.transformer.in_channels, 36);
  EXPECT_EQ(a14b.transformer.out_channels, 16);
  EXPECT_EQ(a14b.boundary_ratio, 0.9);
  EXPECT_TRUE(a14b.image_to_video);
  EXPECT_FALSE(a14b.vae.is_residual);
  EXPECT_EQ(a14b.vae.scale_factor_spatial, 8);
  EXPECT_EQ(builtin_wan_layout("wan2.2-t2v-a14b")->boundary_ratio, 0.875);
  const auto small = *builtin_wan_layout("wan2.1-t2v-1.3b");
  EXPECT_EQ(small.transformer.inner_dim(), 1536);
  EXPECT_EQ(small.transformer.num_layers, 30);
  EXPECT_EQ(small.transformer.ffn_dim, 8960);
  EXPECT_FALSE(small.transformer_2.has_value());
  EXPECT_EQ(describe_wan_layout(*builtin_wan_layout("wan2.2-t2v-a14b")),
            "two experts, 40 blocks of 5120, 16 input channels, Wan2.1 VAE, text-to-video");
  EXPECT_FALSE(builtin_wan_layout("hunyuanvideo-1.5").has_value());
  const auto clip = *builtin_wan_layout("wan2.1-i2v-14b");
  EXPECT_EQ(clip.transformer.image_dim, 1280);
  EXPECT_EQ(clip.transformer.added_kv_proj_dim, 5120);
  EXPECT_EQ(clip.transformer.in_channels, 36);
  EXPECT_TRUE(clip.image_encoder);
  EXPECT_FALSE(clip.transformer_2.has_value());
  // A 36-channel single transformer without image tokens is no released checkpoint.
  auto no_tokens = clip;
  no_tokens.transformer.image_dim = no_tokens.transformer.added_kv_proj_dim = 0;
  EXPECT_EQ(wan_variant_name(no_tokens), "");
}

TEST(WanFamily, WhatCannotBeResolvedIsAConfigError) {
  EXPECT_EQ(error_of<ConfigError>([] { (void)resolve_wan_layout("wan", "", false); }),
            "model.path: model.name 'wan' reads its variant from a Diffusers snapshot: set "
            "model.path, or name the variant (wan2.1-t2v-1.3b, wan2.1-t2v-14b, wan2.1-i2v-14b, "
            "wan2.2-t2v-a14b, wan2.2-i2v-a14b, wan2.2-ti2v-5b)");
  EXPECT_EQ(error_of<ConfigError>([] { (void)resolve_wan_layout("tiny-wan2.2-t2v-a14b", "", true); }),
            "model.weights: tiny-wan2.2-t2v-a14b has seeded random weights only (weights: random)");
  EXPECT_EQ(error_of<ConfigError>([] { (void)resolve_wan_layout("wan2.2-t2v-a14b", "", true); }),
            "model.path: wan2.2-t2v-a14b with pretrained weights needs model.path");
  EXPECT_TRUE(resolve_wan_layout("wan2.1-i2v-14b", "", false).image_encoder);
  EXPECT_TRUE(resolve_wan_layout("tiny-wan2.2-i2v-a14b", "", false).transformer_2.has_value());
}

}  // namespace
}  // namespace omnidp::models::wan

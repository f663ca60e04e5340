// HunyuanVideo-1.5's original-name LoRA formats (Kohya / ComfyUI `diffusion_model.`, musubi-tuner's
// flattened names): every original name lands on a parameter of the transformer, and a file in
// either format reads and fuses as the same adapter in Diffusers names does.
#include "omnidp/models/hv15/lora_names.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"
#include "omnidp/models/hv15/transformer.hpp"
#include "omnidp/models/weights/safetensors.hpp"
#include "omnidp/models/weights/state_dict.hpp"
#include "temp_dir.hpp"

namespace omnidp::models::hv15 {
namespace {
namespace fs = std::filesystem;

// The released layout at a tiny width: one double block, one refiner block, MeanFlow's
// timestep_r embedder, the byT5 and image embedders.
TransformerOptions tiny_options() {
  TransformerOptions o;
  o.in_channels = 9;
  o.out_channels = 4;
  o.num_attention_heads = 2;
  o.attention_head_dim = 16;
  o.rope_axes_dim = {4, 6, 6};
  o.num_layers = 1;
  o.num_refiner_layers = 1;
  o.text_embed_dim = 8;
  o.text_embed_2_dim = 8;
  o.image_embed_dim = 8;
  o.use_meanflow = true;
  return o;
}

std::string with_index(const std::string& name) {
  const auto at = name.find("<N>");
  return at == std::string::npos ? name : name.substr(0, at) + "0" + name.substr(at + 3);
}

TEST(Hv15LoraNames, EveryOriginalNameIsAModuleOfTheTransformer) {
  HunyuanVideo15Transformer3DModel model(tiny_options());
  const auto shapes = parameter_shapes(*model);
  const auto map = hv15_lora_names();
  const auto originals = hv15_lora_original_names();
  EXPECT_EQ(originals.size(), 44U);
  for (const auto& original : originals) {
    const auto name = map.module(with_index(original));
    ASSERT_TRUE(name.has_value()) << original;
    EXPECT_TRUE(shapes.contains(*name + ".weight")) << original << " -> " << *name;
    // musubi-tuner writes the same name with underscores.
    std::string flat = with_index(original);
    std::replace(flat.begin(), flat.end(), '.', '_');
    EXPECT_EQ(map.musubi(flat), with_index(original)) << flat;
  }
  EXPECT_EQ(map.module("double_blocks.12.img_attn_q"), "transformer_blocks.12.attn.to_q");
  EXPECT_EQ(map.module("double_blocks.3.txt_mlp.fc2"), "transformer_blocks.3.ff_context.net.2");
  EXPECT_EQ(map.module("txt_in.individual_token_refiner.blocks.1.adaLN_modulation.1"),
            "context_embedder.token_refiner.refiner_blocks.1.norm_out.linear");
  EXPECT_EQ(map.musubi("double_blocks_12_img_attn_q_norm"), "double_blocks.12.img_attn_q_norm");
  EXPECT_FALSE(map.module("double_blocks.0.img_attn_qkv").has_value());
  EXPECT_FALSE(map.musubi("double_blocks_x_img_attn_q").has_value());
}

class Hv15LoraFiles : public ::testing::Test {
 protected:
  test::TempDir dir_{"hv15_lora_names_test"};
  fs::path write(const std::string& name,
                 const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
    const auto path = dir_.path() / name;
    save_safetensors(path, tensors);
    return path;
  }
};

// The same adapter (rank 4, alpha 2 on the image query, rank 2 on the text MLP's output, a bias
// delta on the image modulation) in three formats fuses into the same weights.
TEST_F(Hv15LoraFiles, OriginalAndMusubiNamesFuseAsDiffusersNames) {
  auto g = at::detail::createCPUGenerator(5);
  const auto a = torch::randn({4, 32}, g), b = torch::randn({32, 4}, g);
  const auto a2 = torch::randn({2, 128}, g), b2 = torch::randn({32, 2}, g);
  const auto bias = torch::randn({192}, g);
  const auto alpha = torch::full({}, 2.0);
  const auto diffusers = write(
      "diffusers.safetensors",
      {{"transformer.transformer_blocks.0.attn.to_q.lora_A.weight", a},
       {"transformer.transformer_blocks.0.attn.to_q.lora_B.weight", b * 0.5},  // alpha/r = 0.5
       {"transformer.transformer_blocks.0.ff_context.net.2.lora_A.weight", a2},
       {"transformer.transformer_blocks.0.ff_context.net.2.lora_B.weight", b2},
       {"transformer.transformer_blocks.0.norm1.linear.diff_b", bias}});
  const auto original = write("kohya.safetensors",
                              {{"diffusion_model.double_blocks.0.img_attn_q.lora_down.weight", a},
                               {"diffusion_model.double_blocks.0.img_attn_q.lora_up.weight", b},
                               {"diffusion_model.double_blocks.0.img_attn_q.alpha", alpha},
                               {"diffusion_model.double_blocks.0.txt_mlp.fc2.lora_down.weight", a2},
                               {"diffusion_model.double_blocks.0.txt_mlp.fc2.lora_up.weight", b2},
                               {"diffusion_model.double_blocks.0.img_mod.linear.diff_b", bias}});
  const auto musubi =
      write("musubi.safetensors", {{"lora_unet_double_blocks_0_img_attn_q.lora_down.weight", a},
                                   {"lora_unet_double_blocks_0_img_attn_q.lora_up.weight", b},
                                   {"lora_unet_double_blocks_0_img_attn_q.alpha", alpha},
                                   {"lora_unet_double_blocks_0_txt_mlp_fc2.lora_down.weight", a2},
                                   {"lora_unet_double_blocks_0_txt_mlp_fc2.lora_up.weight", b2},
                                   {"lora_unet_double_blocks_0_img_mod_linear.diff_b", bias}});
  const auto fused = [&](const fs::path& path) {
    HunyuanVideo15Transformer3DModel model(tiny_options());
    init_random_weights(*model, 3);
    fuse_lora(*model, read_lora_file(path, hv15_lora_names()), 0.8);
    return model;
  };
  const auto want = fused(diffusers);
  for (const auto& path : {original, musubi}) {
    const auto got = fused(path);
    const auto theirs = want->named_parameters();
    for (const auto& p : got->named_parameters()) {
      EXPECT_TRUE(torch::allclose(p.value(), theirs[p.key()], 1e-6, 1e-6))
          << path.filename() << " " << p.key();
    }
  }
  HunyuanVideo15Transformer3DModel base(tiny_options());
  init_random_weights(*base, 3);
  const auto q = "transformer_blocks.0.attn.to_q.weight";
  EXPECT_FALSE(torch::equal(want->named_parameters()[q], base->named_parameters()[q]));
}

// The refiner's fused qkv and the final layer's swapped modulation have no one Diffusers layer:
// their keys are listed, nothing is dropped silently.
TEST_F(Hv15LoraFiles, KeysWithoutOneDiffusersLayerAreListed) {
  const auto path = write(
      "unmapped.safetensors",
      {{"diffusion_model.txt_in.individual_token_refiner.blocks.0.self_attn_qkv.lora_down.weight",
        torch::zeros({2, 32})},
       {"diffusion_model.txt_in.individual_token_refiner.blocks.0.self_attn_qkv.lora_up.weight",
        torch::zeros({96, 2})},
       {"diffusion_model.final_layer.adaLN_modulation.1.diff_b", torch::zeros({64})}});
  try {
    (void)read_lora_file(path, hv15_lora_names());
    FAIL() << "no error";
  } catch (const WeightsError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("3 key(s) of this LoRA (original names (diffusion_model.) format) cannot "
                        "be applied"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("no module 'txt_in.individual_token_refiner.blocks.0.self_attn_qkv'"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("no module 'final_layer.adaLN_modulation.1'"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace omnidp::models::hv15

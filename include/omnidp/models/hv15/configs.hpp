#pragma once
// HunyuanVideo-1.5's transformer config (a Diffusers `transformer/config.json`): the options
// the transformer is built from, parsed and validated here (as wan/configs.cpp does for Wan).
// Pure functions; thread-safe.

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace omnidp::models::hv15 {

// config.json of the `transformer/` folder. Defaults are the released 8.3B model (docs/models.md).
struct TransformerOptions {
  std::int64_t in_channels = 65;
  std::int64_t out_channels = 32;
  std::int64_t num_attention_heads = 16;
  std::int64_t attention_head_dim = 128;
  std::int64_t num_layers = 54;
  std::int64_t num_refiner_layers = 2;
  double mlp_ratio = 4.0;
  std::int64_t patch_size = 1;
  std::int64_t patch_size_t = 1;
  std::string qk_norm = "rms_norm";
  std::int64_t text_embed_dim = 3584;
  std::int64_t text_embed_2_dim = 1472;
  std::int64_t image_embed_dim = 1152;
  double rope_theta = 256.0;
  std::array<std::int64_t, 3> rope_axes_dim{16, 56, 56};
  std::int64_t target_size = 640;
  std::string task_type = "i2v";
  bool use_meanflow = false;

  [[nodiscard]] std::int64_t inner_dim() const noexcept {
    return num_attention_heads * attention_head_dim;
  }
  // Reads a Diffusers config.json; absent keys keep the defaults above. Throws WeightsError
  // naming `origin` for wrong types or inconsistent values (rope dims not summing to the head
  // dim, qk_norm other than rms_norm, ...) and for a checkpoint that is not served
  // (check_served_variant).
  [[nodiscard]] static TransformerOptions from_json(const nlohmann::json& config,
                                                    const std::string& origin);
};

// HunyuanVideo-1.5 checkpoints this port does not serve, recognised by their transformer config
// (docs/models.md, "HunyuanVideo-1.5's released variants"): a sparse-attention checkpoint
// (`attn_mode` "flex-block-attn", or an `attn_param` with `attn_sparse_type`), a super-resolution
// one (`in_channels` = 3 x `out_channels` + 2: latents, image condition + mask, low-resolution
// latents + mask) and any config in Tencent's original layout (`heads_num` or
// `mm_double_blocks_depth`). Throws WeightsError naming `origin` and what to use instead;
// returns for everything else (a non-object included: from_json reports that).
void check_served_variant(const nlohmann::json& config, const std::string& origin);

}  // namespace omnidp::models::hv15

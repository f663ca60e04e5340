#include "omnidp/models/hv15/configs.hpp"

#include <nlohmann/json.hpp>

#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"

namespace omnidp::models::hv15 {

void check_served_variant(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) return;  // from_json reports it
  const auto has = [&j](const char* key) { return j.contains(key) && !j.at(key).is_null(); };
  const bool sparse_mode = has("attn_mode") && j.at("attn_mode").is_string() &&
                           j.at("attn_mode").get<std::string>() == "flex-block-attn";
  const bool sparse_param = has("attn_param") && j.at("attn_param").is_object() &&
                            j.at("attn_param").contains("attn_sparse_type");
  if (sparse_mode || sparse_param) {
    throw WeightsError(origin, std::string(sparse_mode ? "attn_mode 'flex-block-attn'"
                                                       : "attn_param.attn_sparse_type") +
                                   ": a sparse-attention (SSTA) checkpoint of HunyuanVideo-1.5 "
                                   "(720p *_sparse) is not served (Diffusers has no pipeline for "
                                   "it either); use the dense 720p checkpoint (720p_t2v, 720p_i2v "
                                   "or their cfg-distilled *_distilled)");
  }
  if (has("in_channels") && has("out_channels") && j.at("in_channels").is_number_integer() &&
      j.at("out_channels").is_number_integer()) {
    const auto in = j.at("in_channels").get<std::int64_t>();
    const auto out = j.at("out_channels").get<std::int64_t>();
    if (out > 0 && in == 3 * out + 2) {
      throw WeightsError(
          origin,
          "in_channels " + std::to_string(in) +
              " = 3 x out_channels + 2 (latents, image "
              "condition + mask, low-resolution latents + mask): a super-resolution "
              "checkpoint of HunyuanVideo-1.5 (720p_sr_distilled, 1080p_sr_distilled) is not "
              "served (Diffusers has no pipeline for it either)");
    }
  }
  if (has("heads_num") || has("mm_double_blocks_depth")) {
    throw WeightsError(origin,
                       "Tencent's original transformer config (heads_num, "
                       "mm_double_blocks_depth), not a Diffusers one: convert the checkpoint with "
                       "diffusers' scripts/convert_hunyuan_video1_5_to_diffusers.py or use a "
                       "hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-* snapshot (the "
                       "sparse-attention and super-resolution checkpoints are not served at all)");
  }
}

TransformerOptions TransformerOptions::from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw WeightsError(origin, "transformer config is not a JSON object");
  check_served_variant(j, origin);
  TransformerOptions o;
  o.in_channels = config_value(j, "in_channels", o.in_channels, origin);
  o.out_channels = config_value(j, "out_channels", o.out_channels, origin);
  o.num_attention_heads = config_value(j, "num_attention_heads", o.num_attention_heads, origin);
  o.attention_head_dim = config_value(j, "attention_head_dim", o.attention_head_dim, origin);
  o.num_layers = config_value(j, "num_layers", o.num_layers, origin);
  o.num_refiner_layers = config_value(j, "num_refiner_layers", o.num_refiner_layers, origin);
  o.mlp_ratio = config_value(j, "mlp_ratio", o.mlp_ratio, origin);
  o.patch_size = config_value(j, "patch_size", o.patch_size, origin);
  o.patch_size_t = config_value(j, "patch_size_t", o.patch_size_t, origin);
  o.qk_norm = config_value(j, "qk_norm", o.qk_norm, origin);
  o.text_embed_dim = config_value(j, "text_embed_dim", o.text_embed_dim, origin);
  o.text_embed_2_dim = config_value(j, "text_embed_2_dim", o.text_embed_2_dim, origin);
  o.image_embed_dim = config_value(j, "image_embed_dim", o.image_embed_dim, origin);
  o.rope_theta = config_value(j, "rope_theta", o.rope_theta, origin);
  const auto axes = config_value(
      j, "rope_axes_dim", std::vector<std::int64_t>(o.rope_axes_dim.begin(), o.rope_axes_dim.end()),
      origin);
  if (axes.size() != 3) throw WeightsError(origin, "rope_axes_dim must have 3 entries");
  for (std::size_t i = 0; i < 3; ++i) o.rope_axes_dim[i] = axes[i];
  o.target_size = config_value(j, "target_size", o.target_size, origin);
  o.task_type = config_value(j, "task_type", o.task_type, origin);
  o.use_meanflow = config_value(j, "use_meanflow", o.use_meanflow, origin);

  if (o.qk_norm != "rms_norm") {
    throw WeightsError(origin, "qk_norm '" + o.qk_norm + "' is not supported (only rms_norm)");
  }
  if (o.in_channels <= 0 || o.out_channels <= 0 || o.num_attention_heads <= 0 ||
      o.attention_head_dim <= 0 || o.num_layers < 0 || o.num_refiner_layers < 0 ||
      o.patch_size <= 0 || o.patch_size_t <= 0 || o.text_embed_dim <= 0 ||
      o.text_embed_2_dim <= 0 || o.image_embed_dim <= 0 || o.mlp_ratio <= 0.0) {
    throw WeightsError(origin, "transformer config has a non-positive size");
  }
  const auto rope_sum = o.rope_axes_dim[0] + o.rope_axes_dim[1] + o.rope_axes_dim[2];
  if (rope_sum != o.attention_head_dim) {
    throw WeightsError(origin, "rope_axes_dim sums to " + std::to_string(rope_sum) +
                                   ", not attention_head_dim " +
                                   std::to_string(o.attention_head_dim));
  }
  for (const auto d : o.rope_axes_dim) {
    if (d <= 0 || d % 2 != 0) throw WeightsError(origin, "rope_axes_dim entries must be even");
  }
  return o;
}

}  // namespace omnidp::models::hv15

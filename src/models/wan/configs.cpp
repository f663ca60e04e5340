#include "omnidp/models/wan/configs.hpp"

#include <nlohmann/json.hpp>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/wan/transformer.hpp"

namespace omnidp::models::wan {

using nlohmann::json;

WanTransformerOptions WanTransformerOptions::from_json_text(const std::string& text,
                                                            const std::string& origin) {
  const json j = parse_json_object(text, origin);
  WanTransformerOptions o;
  if (j.contains("patch_size")) {
    const auto& p = j.at("patch_size");
    if (!p.is_array() || p.size() != 3)
      throw WeightsError(origin, "patch_size must be a list of 3");
    for (std::size_t i = 0; i < 3; ++i) o.patch_size[i] = p.at(i).get<std::int64_t>();
  }
  o.num_attention_heads =
      config_value<std::int64_t>(j, "num_attention_heads", o.num_attention_heads, origin);
  o.attention_head_dim =
      config_value<std::int64_t>(j, "attention_head_dim", o.attention_head_dim, origin);
  o.in_channels = config_value<std::int64_t>(j, "in_channels", o.in_channels, origin);
  o.out_channels = config_value<std::int64_t>(j, "out_channels", o.in_channels, origin);
  o.text_dim = config_value<std::int64_t>(j, "text_dim", o.text_dim, origin);
  o.freq_dim = config_value<std::int64_t>(j, "freq_dim", o.freq_dim, origin);
  o.ffn_dim = config_value<std::int64_t>(j, "ffn_dim", o.ffn_dim, origin);
  o.num_layers = config_value<std::int64_t>(j, "num_layers", o.num_layers, origin);
  o.rope_max_seq_len = config_value<std::int64_t>(j, "rope_max_seq_len", o.rope_max_seq_len, origin);
  if (j.contains("cross_attn_norm")) o.cross_attn_norm = j.at("cross_attn_norm").get<bool>();
  if (j.contains("eps")) o.eps = j.at("eps").get<double>();
  if (j.contains("qk_norm") && !(j.at("qk_norm").is_string() &&
                                 j.at("qk_norm").get<std::string>() == "rms_norm_across_heads")) {
    throw WeightsError(origin, "unsupported qk_norm " + j.at("qk_norm").dump() +
                                   " (only \"rms_norm_across_heads\")");
  }
  const auto optional_width = [&](const char* key) -> std::int64_t {
    if (!j.contains(key) || j.at(key).is_null()) return 0;
    const auto v = config_value<std::int64_t>(j, key, 0, origin);
    if (v <= 0) throw WeightsError(origin, std::string(key) + " must be > 0 or null");
    return v;
  };
  o.image_dim = optional_width("image_dim");
  o.added_kv_proj_dim = optional_width("added_kv_proj_dim");
  o.pos_embed_seq_len = optional_width("pos_embed_seq_len");
  if ((o.image_dim > 0) != (o.added_kv_proj_dim > 0)) {
    throw WeightsError(origin,
                       "image_dim and added_kv_proj_dim go together (Wan2.1 image-to-video: the "
                       "CLIP image tokens and the cross-attention's added K/V projections)");
  }
  if (o.added_kv_proj_dim > 0 && o.added_kv_proj_dim != o.inner_dim()) {
    throw WeightsError(origin, "added_kv_proj_dim " + std::to_string(o.added_kv_proj_dim) +
                                   " must equal num_attention_heads x attention_head_dim " +
                                   std::to_string(o.inner_dim()) +
                                   " (the embedded image tokens are that wide)");
  }
  if (o.pos_embed_seq_len > 0 && o.image_dim == 0) {
    throw WeightsError(origin,
                       "pos_embed_seq_len needs image_dim (the image embedder's positions)");
  }
  if (o.num_attention_heads <= 0 || o.attention_head_dim <= 0 || o.attention_head_dim % 2 != 0 ||
      o.num_layers < 0 || o.in_channels <= 0 || o.out_channels <= 0 || o.freq_dim % 2 != 0 ||
      o.patch_size[0] <= 0 || o.patch_size[1] <= 0 || o.patch_size[2] <= 0) {
    throw WeightsError(origin, "inconsistent transformer dimensions");
  }
  return o;
}

WanTransformerOptions WanTransformerOptions::from_file(const std::filesystem::path& config_json) {
  return from_json_text(read_json_object(config_json).dump(), config_json.string());
}

const std::string& tiny_wan_transformer_config() {
  static const std::string text = R"json({
 "_class_name": "WanTransformer3DModel",
 "_diffusers_version": "0.40.0.dev0",
 "added_kv_proj_dim": null,
 "attention_head_dim": 64,
 "cross_attn_norm": true,
 "eps": 1e-06,
 "ffn_dim": 128,
 "freq_dim": 256,
 "image_dim": null,
 "in_channels": 48,
 "num_attention_heads": 2,
 "num_layers": 2,
 "out_channels": 48,
 "patch_size": [
  1,
  2,
  2
 ],
 "pos_embed_seq_len": null,
 "qk_norm": "rms_norm_across_heads",
 "rope_max_seq_len": 1024,
 "text_dim": 32
})json";
  return text;
}

const std::string& tiny_wan_vae_config() {
  static const std::string text =
      R"json({"_class_name": "AutoencoderKLWan", "_diffusers_version": "0.40.0.dev0", "attn_scales": [], "base_dim": 8, "decoder_base_dim": 16, "dim_mult": [1, 2, 2, 2], "dropout": 0.0, "in_channels": 12, "is_residual": true, "latents_mean": [-0.7627979516983032, -0.37511590123176575, -0.3269904553890228, -0.8047423958778381, -0.05008358880877495, -0.3045944571495056, -0.4898861348628998, -0.8045481443405151, -0.3560723066329956, 0.15186099708080292, -0.3886571526527405, -0.12572762370109558, -0.11113524436950684, 0.8435567021369934, 0.11421258747577667, 0.23381775617599487, -0.3484862148761749, -0.5803807377815247, 0.3497712016105652, 0.0995408147573471, 0.43284618854522705, 0.12220194935798645, -0.33145567774772644, 0.4036541283130646, 0.5508403182029724, -0.08796802163124084, -1.1227788925170898, -0.7232289910316467, 0.0305776409804821, -0.3088722229003906, -0.39903491735458374, -0.06581160426139832, 0.9396728873252869, -0.03606589138507843, 0.07888530194759369, -0.3867274522781372, 0.0995282530784607, 0.02285138890147209, 0.07647845894098282, -0.23783940076828003, -0.055509913712739944, 0.1463676244020462, -0.0789225772023201, -0.014393569901585579, 1.1785554885864258, -0.5186693668365479, 0.7873990535736084, -0.31492361426353455], "latents_std": [1.355621337890625, 1.4451828002929688, 1.019305944442749, 1.2616090774536133, 1.7713170051574707, 1.3784613609313965, 1.9980247020721436, 1.900794267654419, 1.476588249206543, 1.166258454322815, 1.804481029510498, 1.6551785469055176, 1.1767901182174683, 1.8247723579406738, 1.8035509586334229, 1.943447470664978, 1.2197201251983643, 1.4176969528198242, 1.49031400680542, 1.573028802871704, 1.1205408573150635, 1.145188808441162, 1.7720022201538086, 1.3827540874481201, 1.744236707687378, 1.5285049676895142, 1.6641724109649658, 1.6099443435668945, 1.6817996501922607, 1.7478554248809814, 1.0369439125061035, 1.7516757249832153, 1.1484384536743164, 1.1227455139160156, 1.530407190322876, 1.4147963523864746, 1.7936620712280273, 1.2104321718215942, 1.055509090423584, 1.863884449005127, 1.4258590936660767, 1.7812285423278809, 1.6607422828674316, 1.125062346458435, 1.6004490852355957, 1.620098352432251, 1.1652207374572754, 1.2627638578414917], "num_res_blocks": 1, "out_channels": 12, "patch_size": 2, "scale_factor_spatial": 16, "scale_factor_temporal": 4, "temperal_downsample": [false, true, true], "z_dim": 48})json";
  return text;
}

const std::string& wan22_ti2v_5b_transformer_config() {
  static const std::string text = R"json({
 "_class_name": "WanTransformer3DModel",
 "added_kv_proj_dim": null,
 "attention_head_dim": 128,
 "cross_attn_norm": true,
 "eps": 1e-06,
 "ffn_dim": 14336,
 "freq_dim": 256,
 "image_dim": null,
 "in_channels": 48,
 "num_attention_heads": 24,
 "num_layers": 30,
 "out_channels": 48,
 "patch_size": [
  1,
  2,
  2
 ],
 "pos_embed_seq_len": null,
 "qk_norm": "rms_norm_across_heads",
 "rope_max_seq_len": 1024,
 "text_dim": 4096
})json";
  return text;
}

}  // namespace omnidp::models::wan

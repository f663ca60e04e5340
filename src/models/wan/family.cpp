#include "omnidp/models/wan/family.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/wan/configs.hpp"
#include "omnidp/models/weights/checkpoint.hpp"

namespace omnidp::models::wan {
namespace fs = std::filesystem;

namespace {

// A WanTransformer3DModel of the released family: head dim 128, UMT5-XXL text (4096), patch
// (1, 2, 2).
WanTransformerOptions released(std::int64_t heads, std::int64_t layers, std::int64_t ffn,
                               std::int64_t in, std::int64_t out) {
  WanTransformerOptions o{.num_attention_heads = heads,
                          .in_channels = in,
                          .out_channels = out,
                          .ffn_dim = ffn,
                          .num_layers = layers};
  return o;
}

// The tiny configuration of the repository's fixtures (scripts/wan_family_fixtures.py).
WanTransformerOptions tiny(std::int64_t in) {
  WanTransformerOptions o{.num_attention_heads = 2,
                          .attention_head_dim = 32,
                          .in_channels = in,
                          .out_channels = 16,
                          .text_dim = 32,
                          .ffn_dim = 128,
                          .num_layers = 2};
  return o;
}

// Wan2.1 I2V's CLIP image tokens: image_dim (the image encoder's width) and the added K/V.
WanTransformerOptions with_image_tokens(WanTransformerOptions o, std::int64_t image_dim) {
  o.image_dim = image_dim;
  o.added_kv_proj_dim = o.inner_dim();
  return o;
}

AutoencoderKLWanOptions tiny_wan21_vae() {
  auto o = AutoencoderKLWanOptions::wan21();
  o.base_dim = o.decoder_base_dim = 8;
  return o;
}

WanLayout layout(WanTransformerOptions t, AutoencoderKLWanOptions vae, bool i2v,
                 std::optional<double> boundary = std::nullopt, bool expand = false) {
  WanLayout l;
  l.image_to_video = i2v;
  l.expand_timesteps = expand;
  l.boundary_ratio = boundary;
  l.transformer = t;
  if (boundary) l.transformer_2 = t;
  l.vae = std::move(vae);
  return l;
}

// Diffusers' conversions write boundary_ratio 0.875 (T2V) and 0.9 (I2V).
constexpr double kT2vBoundary = 0.875;
constexpr double kI2vBoundary = 0.9;

bool present(const nlohmann::json& index, const char* component) {
  if (!index.contains(component)) return false;
  const auto& v = index.at(component);
  return !v.is_null() && !(v.is_array() && (v.empty() || v.at(0).is_null()));
}

}  // namespace

const std::vector<std::string>& wan_model_names() {
  static const std::vector<std::string> names{"wan",
                                              "wan2.1-t2v-1.3b",
                                              "wan2.1-t2v-14b",
                                              "wan2.1-i2v-14b",
                                              "wan2.2-t2v-a14b",
                                              "wan2.2-i2v-a14b",
                                              "wan2.2-ti2v-5b",
                                              "tiny-wan",
                                              "tiny-wan2.1-t2v",
                                              "tiny-wan2.2-t2v-a14b",
                                              "tiny-wan2.2-i2v-a14b",
                                              "tiny-wan2.1-i2v"};
  return names;
}

std::optional<WanLayout> builtin_wan_layout(std::string_view name) {
  std::optional<WanLayout> l;
  if (name == "wan2.1-t2v-1.3b") {
    l = layout(released(12, 30, 8960, 16, 16), AutoencoderKLWanOptions::wan21(), false);
  } else if (name == "wan2.1-t2v-14b") {
    l = layout(released(40, 40, 13824, 16, 16), AutoencoderKLWanOptions::wan21(), false);
  } else if (name == "wan2.2-t2v-a14b") {
    l = layout(released(40, 40, 13824, 16, 16), AutoencoderKLWanOptions::wan21(), false,
               kT2vBoundary);
  } else if (name == "wan2.2-i2v-a14b") {
    l = layout(released(40, 40, 13824, 36, 16), AutoencoderKLWanOptions::wan21(), true, kI2vBoundary);
  } else if (name == "wan2.2-ti2v-5b") {
    l = layout(WanTransformerOptions::from_json_text(wan22_ti2v_5b_transformer_config(),
                                                     "wan2.2-ti2v-5b transformer"),
               AutoencoderKLWanOptions::wan22_ti2v_5b(), true, std::nullopt, true);
  } else if (name == "tiny-wan") {
    l = layout(WanTransformerOptions::from_json_text(tiny_wan_transformer_config(),
                                                     "tiny-wan transformer"),
               AutoencoderKLWanOptions::from_json_text(tiny_wan_vae_config(), "tiny-wan vae"), true,
               std::nullopt, true);
  } else if (name == "tiny-wan2.1-t2v") {
    l = layout(tiny(16), tiny_wan21_vae(), false);
  } else if (name == "tiny-wan2.2-t2v-a14b") {
    l = layout(tiny(16), tiny_wan21_vae(), false, kT2vBoundary);
  } else if (name == "tiny-wan2.2-i2v-a14b") {
    l = layout(tiny(36), tiny_wan21_vae(), true, kI2vBoundary);
  } else if (name == "wan2.1-i2v-14b") {
    l = layout(with_image_tokens(released(40, 40, 13824, 36, 16), 1280),
               AutoencoderKLWanOptions::wan21(), true);
    l->image_encoder = true;
  } else if (name == "tiny-wan2.1-i2v") {
    l = layout(with_image_tokens(tiny(36), 32), tiny_wan21_vae(), true);
    l->image_encoder = true;
  }
  if (l) l->origin = "built-in " + std::string(name);
  return l;
}

std::string wan_variant_name(const WanLayout& l) {
  // The structure names the checkpoint; the width only tells Wan2.1's 1.3B from its 14B.
  const auto& t = l.transformer;
  const auto dim = t.inner_dim();
  if (l.expand_timesteps) {
    return t.in_channels == 48 && l.vae.is_residual && !l.transformer_2 ? "wan2.2-ti2v-5b" : "";
  }
  if (l.vae.is_residual || l.vae.z_dim != 16) return "";
  if (l.transformer_2) {
    if (t.in_channels == 16 && !l.image_to_video) return "wan2.2-t2v-a14b";
    if (t.in_channels == 36 && l.image_to_video && !l.image_encoder) return "wan2.2-i2v-a14b";
    return "";
  }
  if (t.in_channels == 36 && l.image_to_video && l.image_encoder && t.image_tokens()) {
    return "wan2.1-i2v-14b";
  }
  if (t.in_channels == 16 && !l.image_to_video) {
    if (dim == 1536) return "wan2.1-t2v-1.3b";
    if (dim == 5120) return "wan2.1-t2v-14b";
  }
  return "";
}

std::string describe_wan_layout(const WanLayout& l) {
  std::ostringstream out;
  out << (l.transformer_2 ? "two experts, " : "one transformer, ") << l.transformer.num_layers
      << " blocks of " << l.transformer.inner_dim() << ", " << l.transformer.in_channels
      << " input channels, " << (l.vae.is_residual ? "Wan2.2" : "Wan2.1") << " VAE"
      << (l.image_to_video ? ", image-to-video" : ", text-to-video")
      << (l.transformer.pos_embed_seq_len > 0 ? " (first-last-frame)" : "")
      << (l.expand_timesteps ? " (expand_timesteps)" : "");
  return out.str();
}

WanLayout read_wan_snapshot(const fs::path& root) {
  const auto index_file = root / "model_index.json";
  if (!fs::is_regular_file(index_file)) {
    throw WeightsError(index_file.string(), "missing: the snapshot " + root.string() +
                                                " has no model_index.json (WanPipeline)");
  }
  const auto index = read_json_object(index_file);
  const auto origin = index_file.string();
  WanLayout l;
  l.origin = root.string();
  // No _class_name: the text-to-video class (what a hand-made folder usually means).
  const auto cls = index.contains("_class_name") ? index.value("_class_name", std::string())
                                                 : std::string("WanPipeline");
  if (cls != "WanPipeline" && cls != "WanImageToVideoPipeline") {
    throw WeightsError(
        origin,
        "_class_name '" + cls + "' is not a Wan pipeline (WanPipeline, WanImageToVideoPipeline)");
  }
  l.image_to_video = cls == "WanImageToVideoPipeline";
  l.expand_timesteps = config_value<bool>(index, "expand_timesteps", false, origin);
  if (index.contains("boundary_ratio") && !index.at("boundary_ratio").is_null()) {
    const double b = config_value<double>(index, "boundary_ratio", 0.0, origin);
    if (!(b > 0.0 && b < 1.0)) {
      throw WeightsError(origin, "boundary_ratio must lie in (0, 1)");
    }
    l.boundary_ratio = b;
  }
  const auto component_config = [&](const char* dir, const char* what) {
    return snapshot_component(root, dir, "config.json", what) / "config.json";
  };
  const auto transformer_file =
      component_config("transformer", "WanTransformer3DModel: config.json + safetensors");
  l.transformer = WanTransformerOptions::from_file(transformer_file);
  if (present(index, "transformer_2")) {
    if (!l.boundary_ratio) {
      throw WeightsError(
          origin,
          "transformer_2 is set but boundary_ratio is not: the two experts switch at "
          "boundary_ratio x num_train_timesteps");
    }
    const auto file =
        component_config("transformer_2", "WanTransformer3DModel: config.json + safetensors");
    l.transformer_2 = WanTransformerOptions::from_file(file);
    if (l.transformer_2->in_channels != l.transformer.in_channels ||
        l.transformer_2->out_channels != l.transformer.out_channels ||
        l.transformer_2->text_dim != l.transformer.text_dim ||
        l.transformer_2->patch_size != l.transformer.patch_size ||
        l.transformer_2->image_dim != l.transformer.image_dim ||
        l.transformer_2->added_kv_proj_dim != l.transformer.added_kv_proj_dim ||
        l.transformer_2->pos_embed_seq_len != l.transformer.pos_embed_seq_len) {
      throw WeightsError(file.string(),
                         "the low-noise expert's channels, text width, patch or image tokens "
                         "differ from transformer/config.json");
    }
  } else if (l.boundary_ratio) {
    throw WeightsError(origin, "boundary_ratio is set but there is no transformer_2");
  }
  const auto vae_file = component_config("vae", "AutoencoderKLWan: config.json + safetensors");
  l.vae = AutoencoderKLWanOptions::from_file(vae_file);
  const bool encoder = fs::is_directory(root / "image_encoder");
  if (encoder && !fs::is_directory(root / "image_processor")) {
    throw WeightsError((root / "image_processor").string(),
                       "missing: the snapshot has image_encoder/ but no image_processor/ "
                       "(CLIPImageProcessor: preprocessor_config.json)");
  }
  l.image_encoder = encoder;
  if (encoder && !fs::is_regular_file(root / "image_processor" / "preprocessor_config.json")) {
    throw WeightsError((root / "image_processor" / "preprocessor_config.json").string(),
                       "missing: the CLIP image processor's configuration");
  }
  if (encoder != l.transformer.image_tokens()) {
    throw WeightsError(encoder ? (root / "image_encoder").string() : transformer_file.string(),
                       encoder
                           ? "the snapshot has an image encoder, but " + transformer_file.string() +
                                 " has no image_dim (no transformer here takes image tokens)"
                           : "image_dim " + std::to_string(l.transformer.image_dim) +
                                 " is set, but the snapshot has no image_encoder/ (CLIP)");
  }
  if (encoder) {
    const auto clip_file =
        component_config("image_encoder", "CLIPVisionModel: config.json + safetensors");
    const auto clip = read_json_object(clip_file);
    const auto& vision = clip.contains("vision_config") ? clip.at("vision_config") : clip;
    const auto width = vision.is_object() && vision.contains("hidden_size") &&
                               vision.at("hidden_size").is_number_integer()
                           ? vision.at("hidden_size").get<std::int64_t>()
                           : std::int64_t{768};  // CLIPVisionConfig's default
    if (width != l.transformer.image_dim) {
      throw WeightsError(clip_file.string(),
                         "hidden_size " + std::to_string(width) + " does not match image_dim " +
                             std::to_string(l.transformer.image_dim) + " of " +
                             transformer_file.string() +
                             " (the encoder's tokens are the transformer's image input)");
    }
  }
  const auto z = l.vae.z_dim;
  const auto& t = l.transformer;
  if (t.out_channels != z) {
    throw WeightsError(vae_file.string(), "z_dim " + std::to_string(z) + " (the " +
                                              (l.vae.is_residual ? "Wan2.2-TI2V" : "Wan2.1") +
                                              " layout) does not match out_channels " +
                                              std::to_string(t.out_channels) + " of " +
                                              transformer_file.string());
  }
  const bool concat_i2v = t.in_channels == 2 * z + l.vae.scale_factor_temporal;
  if (!l.expand_timesteps && concat_i2v && !l.image_to_video) {
    throw WeightsError(transformer_file.string(),
                       "in_channels " + std::to_string(t.in_channels) +
                           " is an image-to-video transformer, but model_index.json names "
                           "WanPipeline (text-to-video)");
  }
  if (!l.expand_timesteps && l.image_to_video && !concat_i2v) {
    throw WeightsError(transformer_file.string(),
                       "in_channels " + std::to_string(t.in_channels) +
                           " is a text-to-video transformer, but model_index.json names "
                           "WanImageToVideoPipeline (which needs " +
                           std::to_string(2 * z + l.vae.scale_factor_temporal) + ")");
  }
  if (!concat_i2v && t.in_channels != z) {
    throw WeightsError(transformer_file.string(), "in_channels " + std::to_string(t.in_channels) +
                                                      " does not match z_dim " + std::to_string(z) +
                                                      " of " + vae_file.string());
  }
  return l;
}

WanLayout resolve_wan_layout(const std::string& name, const std::string& path, bool pretrained) {
  const bool tiny_name = name.rfind("tiny-", 0) == 0;
  if (tiny_name) {
    if (pretrained) {
      throw ConfigError("model.weights",
                        name + " has seeded random weights only (weights: random)");
    }
    return *builtin_wan_layout(name);
  }
  if (path.empty()) {
    if (name == "wan") {
      throw ConfigError("model.path",
                        "model.name 'wan' reads its variant from a Diffusers snapshot: set "
                        "model.path, or name the variant (wan2.1-t2v-1.3b, wan2.1-t2v-14b, "
                        "wan2.1-i2v-14b, wan2.2-t2v-a14b, wan2.2-i2v-a14b, wan2.2-ti2v-5b)");
    }
    if (pretrained) {
      throw ConfigError("model.path", name + " with pretrained weights needs model.path");
    }
    return *builtin_wan_layout(name);
  }
  auto l = read_wan_snapshot(fs::path(path));
  const auto held = wan_variant_name(l);
  if (name != "wan" && held != name) {
    throw ConfigError("model.name",
                      "'" + name + "' does not match the snapshot " + path + ", which holds " +
                          (held.empty() ? std::string("no released Wan checkpoint") : held) + " (" +
                          describe_wan_layout(l) +
                          "); model.name: wan takes the snapshot's variant");
  }
  return l;
}

}  // namespace omnidp::models::wan

#include "omnidp/models/text/qwen25vl.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <array>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::text {
namespace fs = std::filesystem;

namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  const auto half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

Qwen25VLTextOptions Qwen25VLTextOptions::from_json(const nlohmann::json& config_in,
                                                   const std::string& origin) {
  const auto& config = config_in.contains("text_config") && config_in.at("text_config").is_object()
                           ? config_in.at("text_config")
                           : config_in;
  Qwen25VLTextOptions o;
  try {
    o.vocab_size = config.at("vocab_size").get<std::int64_t>();
    o.hidden_size = config.at("hidden_size").get<std::int64_t>();
    o.intermediate_size = config.at("intermediate_size").get<std::int64_t>();
    o.num_hidden_layers = config.at("num_hidden_layers").get<std::int64_t>();
    o.num_attention_heads = config.at("num_attention_heads").get<std::int64_t>();
    o.num_key_value_heads =
        config_value<std::int64_t>(config, "num_key_value_heads", o.num_attention_heads, origin);
    o.head_dim = o.num_attention_heads > 0 ? o.hidden_size / o.num_attention_heads : 0;
    o.head_dim = config_value<std::int64_t>(config, "head_dim", o.head_dim, origin);
    o.rms_norm_eps = config_value<double>(config, "rms_norm_eps", 1e-6, origin);
    o.rope_theta = config_value<double>(config, "rope_theta", 10000.0, origin);
    if (config.contains("rope_parameters") && config.at("rope_parameters").is_object()) {
      o.rope_theta =
          config_value<double>(config.at("rope_parameters"), "rope_theta", o.rope_theta, origin);
    }
    if (config_value<bool>(config, "use_sliding_window", false, origin)) {
      throw WeightsError(origin,
                         "sliding-window attention (use_sliding_window: true) is not supported");
    }
    const auto act = config_value<std::string>(config, "hidden_act", "silu", origin);
    if (act != "silu")
      throw WeightsError(origin, "unsupported hidden_act '" + act + "' (only silu)");
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(origin, std::string("invalid Qwen2.5-VL text config: ") + e.what());
  }
  if (o.vocab_size <= 0 || o.hidden_size <= 0 || o.intermediate_size <= 0 ||
      o.num_hidden_layers <= 0 || o.num_attention_heads <= 0 || o.num_key_value_heads <= 0 ||
      o.head_dim <= 0 || o.head_dim % 2 != 0 || o.num_attention_heads % o.num_key_value_heads != 0) {
    throw WeightsError(origin,
                       "invalid Qwen2.5-VL text config: sizes must be positive, head_dim even and "
                       "num_attention_heads a multiple of num_key_value_heads");
  }
  return o;
}

Qwen25VLAttentionImpl::Qwen25VLAttentionImpl(const Qwen25VLTextOptions& o, const ParamSpec& spec)
    : heads_(o.num_attention_heads), kv_heads_(o.num_key_value_heads), head_dim_(o.head_dim) {
  q_proj = register_module("q_proj", Linear(o.hidden_size, heads_ * head_dim_, true, spec));
  k_proj = register_module("k_proj", Linear(o.hidden_size, kv_heads_ * head_dim_, true, spec));
  v_proj = register_module("v_proj", Linear(o.hidden_size, kv_heads_ * head_dim_, true, spec));
  o_proj = register_module("o_proj", Linear(heads_ * head_dim_, o.hidden_size, false, spec));
}

torch::Tensor Qwen25VLAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                             const torch::Tensor& sin,
                                             const torch::Tensor& mask) const {
  const auto b = x.size(0);
  const auto l = x.size(1);
  auto q = q_proj->forward(x).view({b, l, heads_, head_dim_}).transpose(1, 2);
  auto k = k_proj->forward(x).view({b, l, kv_heads_, head_dim_}).transpose(1, 2);
  auto v = v_proj->forward(x).view({b, l, kv_heads_, head_dim_}).transpose(1, 2);
  q = q * cos + rotate_half(q) * sin;
  k = k * cos + rotate_half(k) * sin;
  if (kv_heads_ != heads_) {  // GQA: each key/value head serves heads / kv_heads query heads
    k = k.repeat_interleave(heads_ / kv_heads_, 1);
    v = v.repeat_interleave(heads_ / kv_heads_, 1);
  }
  const auto out = omnidp::models::scaled_dot_product_attention(q, k, v, mask);
  return o_proj->forward(out.transpose(1, 2).reshape({b, l, heads_ * head_dim_}));
}

Qwen2MLPImpl::Qwen2MLPImpl(const Qwen25VLTextOptions& o, const ParamSpec& spec) {
  gate_proj = register_module("gate_proj", Linear(o.hidden_size, o.intermediate_size, false, spec));
  up_proj = register_module("up_proj", Linear(o.hidden_size, o.intermediate_size, false, spec));
  down_proj = register_module("down_proj", Linear(o.intermediate_size, o.hidden_size, false, spec));
}

torch::Tensor Qwen2MLPImpl::forward(const torch::Tensor& x) const {
  return down_proj->forward(torch::silu(gate_proj->forward(x)) * up_proj->forward(x));
}

Qwen25VLDecoderLayerImpl::Qwen25VLDecoderLayerImpl(const Qwen25VLTextOptions& o,
                                                   const ParamSpec& spec) {
  self_attn = register_module("self_attn", Qwen25VLAttention(o, spec));
  mlp = register_module("mlp", Qwen2MLP(o, spec));
  input_layernorm = register_module(
      "input_layernorm", RMSNorm(o.hidden_size, o.rms_norm_eps, RmsNormStyle::qwen2, spec.options()));
  post_attention_layernorm =
      register_module("post_attention_layernorm",
                      RMSNorm(o.hidden_size, o.rms_norm_eps, RmsNormStyle::qwen2, spec.options()));
}

torch::Tensor Qwen25VLDecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                                const torch::Tensor& sin,
                                                const torch::Tensor& mask) const {
  const auto h = x + self_attn->forward(input_layernorm->forward(x), cos, sin, mask);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

Qwen25VLTextModelImpl::Qwen25VLTextModelImpl(const Qwen25VLTextOptions& options, const ParamSpec& spec)
    : options_(options) {
  embed_tokens =
      register_module("embed_tokens", Embedding(options.vocab_size, options.hidden_size, spec));
  layers = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < options.num_hidden_layers; ++i)
    layers->push_back(Qwen25VLDecoderLayer(options, spec));
  norm = register_module("norm", RMSNorm(options.hidden_size, options.rms_norm_eps,
                                         RmsNormStyle::qwen2, spec.options()));
}

torch::Tensor Qwen25VLTextModelImpl::hidden_state(const torch::Tensor& input_ids,
                                                  const torch::Tensor& attention_mask,
                                                  std::int64_t index) const {
  const auto n = options_.num_hidden_layers;
  const auto entry = index < 0 ? index + n + 1 : index;
  if (entry < 0 || entry > n) {
    throw ModelError(fmt::format("hidden state index {} out of range for {} layers", index, n));
  }
  if (input_ids.dim() != 2) throw ModelError("Qwen2.5-VL text model: input_ids must be [B, L]");
  const auto b = input_ids.size(0);
  const auto l = input_ids.size(1);
  const auto device = embed_tokens->weight.device();
  const auto dtype = embed_tokens->weight.scalar_type();
  auto h = embed_tokens->forward(input_ids.to(device));
  if (entry == 0) return h;

  // Text-only RoPE: positions 0..L-1 on every mrope axis, so the sections pick identical values.
  const auto fopts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  const auto dim = options_.head_dim;
  const auto exponent =
      torch::arange(0, dim, 2, torch::TensorOptions().dtype(torch::kLong).device(device))
          .to(torch::kFloat32) /
      static_cast<float>(dim);
  const auto inv_freq = 1.0 / torch::pow(options_.rope_theta, exponent);
  const auto freqs = torch::outer(torch::arange(l, fopts), inv_freq);  // [L, D/2]
  const auto emb = torch::cat({freqs, freqs}, -1);
  const auto cos = emb.cos().to(dtype).view({1, 1, l, dim});
  const auto sin = emb.sin().to(dtype).view({1, 1, l, dim});

  // Causal and key-padding mask; the diagonal is always allowed so that no row is fully masked
  // (only padding rows are affected, and their values are ignored).
  const auto bopts = torch::TensorOptions().dtype(torch::kBool).device(device);
  auto mask = torch::ones({l, l}, bopts).tril().view({1, 1, l, l});
  if (attention_mask.defined()) {
    if (attention_mask.sizes() != input_ids.sizes()) {
      throw ModelError("Qwen2.5-VL text model: attention_mask must have the shape of input_ids");
    }
    const auto keys = attention_mask.to(device).ne(0).view({b, 1, 1, l});
    mask = torch::logical_or(torch::logical_and(mask, keys), torch::eye(l, bopts).view({1, 1, l, l}));
  }
  const auto run = std::min(entry, n);
  for (std::int64_t i = 0; i < run; ++i)
    h = layers->ptr<Qwen25VLDecoderLayerImpl>(i)->forward(h, cos, sin, mask);
  return entry == n ? norm->forward(h) : h;
}

torch::Tensor Qwen25VLTextModelImpl::forward(const torch::Tensor& input_ids,
                                             const torch::Tensor& attention_mask) const {
  return hidden_state(input_ids, attention_mask, -1);
}

Qwen25VLTextModel load_qwen25vl_text(const fs::path& dir, torch::ScalarType dtype,
                                     torch::Device device) {
  const auto options = options_from_folder<Qwen25VLTextOptions>(dir);
  const auto checkpoint = Checkpoint::open(dir);
  Qwen25VLTextModel model(options, ParamSpec{dtype, device});  // loaded in place, no host copy

  // Where the text model sits in the checkpoint: the first prefix with its embedding table.
  static constexpr std::array<const char*, 4> kPrefixes{"", "model.", "language_model.",
                                                        "model.language_model."};
  std::string prefix;
  bool found = false;
  for (const auto* p : kPrefixes) {
    if (checkpoint.contains(std::string(p) + "embed_tokens.weight")) {
      prefix = p;
      found = true;
      break;
    }
  }
  if (!found)
    throw WeightsError(dir.string(), "no embed_tokens.weight (under '', model., language_model.)");

  // The model nested under the prefix, so that the strict loader sees the checkpoint's names.
  LoadOptions load;
  load.in_place = true;
  if (!prefix.empty()) {
    load.ignore_unexpected = [prefix](const std::string& name) { return name.rfind(prefix, 0) != 0; };
  }
  load_state_dict_under(prefix, model.ptr(), checkpoint, dtype, device, load);
  freeze(*model);
  model->eval();
  return model;
}

Qwen25VLTextModel random_qwen25vl_text(const Qwen25VLTextOptions& options, std::uint64_t seed,
                                       torch::ScalarType dtype, torch::Device device) {
  return random_encoder<Qwen25VLTextModel>(options, seed, dtype, device);
}

}  // namespace omnidp::models::text

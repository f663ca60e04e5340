#include "omnidp/models/vision/siglip.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::vision {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kWhat = "SigLIP vision config: ";

bool supported_activation(const std::string& a) {
  return a == "gelu_pytorch_tanh" || a == "gelu_new" || a == "gelu_fast" || a == "gelu" ||
         a == "quick_gelu";
}

torch::Tensor activation(const torch::Tensor& x, const std::string& name) {
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast")
    return torch::gelu(x, "tanh");
  if (name == "gelu") return torch::gelu(x);
  if (name == "quick_gelu") return x * torch::sigmoid(1.702 * x);
  throw ModelError("unsupported SigLIP activation '" + name + "'");
}

const json* find_key(const json& config, const char* key) {
  const auto it = config.find(key);
  return it == config.end() || it->is_null() ? nullptr : &*it;
}

std::int64_t int_value(const json& config, const char* key, const std::string& origin,
                       std::optional<std::int64_t> fallback = std::nullopt) {
  const json* v = find_key(config, key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    throw WeightsError(origin, std::string(kWhat) + "missing key '" + key + "'");
  }
  if (!v->is_number_integer())
    throw WeightsError(origin, std::string(kWhat) + "key '" + key + "' must be an integer");
  const auto n = v->get<std::int64_t>();
  if (n <= 0)
    throw WeightsError(origin,
                       std::string(kWhat) + "key '" + key + "' must be positive, got " + v->dump());
  return n;
}

double double_value(const json& config, const char* key, const std::string& origin, double fallback) {
  const json* v = find_key(config, key);
  if (v == nullptr) return fallback;
  if (!v->is_number())
    throw WeightsError(origin, std::string(kWhat) + "key '" + key + "' must be a number");
  return v->get<double>();
}

std::string string_value(const json& config, const char* key, const std::string& origin,
                         const std::string& fallback) {
  const json* v = find_key(config, key);
  if (v == nullptr) return fallback;
  if (!v->is_string())
    throw WeightsError(origin, std::string(kWhat) + "key '" + key + "' must be a string");
  return v->get<std::string>();
}

bool bool_value(const json& config, const char* key, const std::string& origin, bool fallback) {
  const json* v = find_key(config, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean())
    throw WeightsError(origin, std::string(kWhat) + "key '" + key + "' must be true or false");
  return v->get<bool>();
}

}  // namespace

SiglipVisionOptions SiglipVisionOptions::from_json(const json& config_in, const std::string& origin) {
  if (!config_in.is_object()) throw WeightsError(origin, std::string(kWhat) + "not a JSON object");
  const json* nested = find_key(config_in, "vision_config");
  if (nested != nullptr && !nested->is_object()) {
    throw WeightsError(origin, std::string(kWhat) + "key 'vision_config' must be an object");
  }
  const json& config = nested != nullptr ? *nested : config_in;
  const auto model_type = string_value(config, "model_type", origin, "siglip_vision_model");
  if (model_type != "siglip_vision_model") {
    throw WeightsError(origin, std::string(kWhat) + "key 'model_type' is '" + model_type +
                                   "', expected 'siglip_vision_model'");
  }
  SiglipVisionOptions o;
  o.hidden_size = int_value(config, "hidden_size", origin);
  o.intermediate_size = int_value(config, "intermediate_size", origin);
  o.num_hidden_layers = int_value(config, "num_hidden_layers", origin);
  o.num_attention_heads = int_value(config, "num_attention_heads", origin);
  o.image_size = int_value(config, "image_size", origin);
  o.patch_size = int_value(config, "patch_size", origin);
  o.num_channels = int_value(config, "num_channels", origin, 3);
  o.layer_norm_eps = double_value(config, "layer_norm_eps", origin, 1e-6);
  o.hidden_act = string_value(config, "hidden_act", origin, "gelu_pytorch_tanh");
  o.use_head = bool_value(config, "vision_use_head", origin, true);
  if (!supported_activation(o.hidden_act)) {
    throw WeightsError(
        origin, std::string(kWhat) + "key 'hidden_act' is '" + o.hidden_act +
                    "' (supported: gelu_pytorch_tanh, gelu_new, gelu_fast, gelu, quick_gelu)");
  }
  if (o.hidden_size % o.num_attention_heads != 0) {
    throw WeightsError(
        origin,
        fmt::format("{}key 'hidden_size' ({}) must be a multiple of num_attention_heads ({})",
                    kWhat, o.hidden_size, o.num_attention_heads));
  }
  if (o.patch_size > o.image_size) {
    throw WeightsError(origin, std::string(kWhat) + "key 'patch_size' is larger than image_size");
  }
  if (!(o.layer_norm_eps > 0.0) || !std::isfinite(o.layer_norm_eps)) {
    throw WeightsError(origin, std::string(kWhat) + "key 'layer_norm_eps' must be positive");
  }
  return o;
}

SiglipLayerNormImpl::SiglipLayerNormImpl(std::int64_t dim, double eps, const ParamSpec& spec)
    : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}, spec.options()), false);
  bias = register_parameter("bias", torch::zeros({dim}, spec.options()), false);
}

torch::Tensor SiglipLayerNormImpl::forward(const torch::Tensor& x) const {
  return torch::layer_norm(x, {weight.size(0)}, weight, bias, eps_);
}

SiglipPatchConvImpl::SiglipPatchConvImpl(const SiglipVisionOptions& o, const ParamSpec& spec)
    : patch_size_(o.patch_size) {
  weight = register_parameter(
      "weight",
      torch::empty({o.hidden_size, o.num_channels, o.patch_size, o.patch_size}, spec.options()),
      false);
  bias = register_parameter("bias", torch::empty({o.hidden_size}, spec.options()), false);
}

torch::Tensor SiglipPatchConvImpl::forward(const torch::Tensor& x) const {
  return torch::conv2d(x, weight, bias, {patch_size_, patch_size_});
}

SiglipVisionEmbeddingsImpl::SiglipVisionEmbeddingsImpl(const SiglipVisionOptions& o,
                                                       const ParamSpec& spec) {
  patch_embedding = register_module("patch_embedding", SiglipPatchConv(o, spec));
  position_embedding =
      register_module("position_embedding", text::Embedding(o.num_patches(), o.hidden_size, spec));
}

torch::Tensor SiglipVisionEmbeddingsImpl::forward(const torch::Tensor& pixel_values) const {
  const auto patches =
      patch_embedding->forward(pixel_values).flatten(2).transpose(1, 2);  // [B, N, D]
  return patches + position_embedding->weight.unsqueeze(0);
}

SiglipAttentionImpl::SiglipAttentionImpl(const SiglipVisionOptions& o, const ParamSpec& spec)
    : num_heads_(o.num_attention_heads), head_dim_(o.head_dim()) {
  q_proj = register_module("q_proj", Linear(o.hidden_size, o.hidden_size, true, spec));
  k_proj = register_module("k_proj", Linear(o.hidden_size, o.hidden_size, true, spec));
  v_proj = register_module("v_proj", Linear(o.hidden_size, o.hidden_size, true, spec));
  out_proj = register_module("out_proj", Linear(o.hidden_size, o.hidden_size, true, spec));
}

torch::Tensor SiglipAttentionImpl::forward(const torch::Tensor& x) const {
  const auto b = x.size(0);
  const auto l = x.size(1);
  auto heads = [&](const Linear& proj) {
    return proj->forward(x).view({b, l, num_heads_, head_dim_}).transpose(1, 2);
  };
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  const auto out = models::scaled_dot_product_attention(heads(q_proj), heads(k_proj), heads(v_proj),
                                                        std::nullopt, scale);
  return out_proj->forward(out.transpose(1, 2).reshape({b, l, num_heads_ * head_dim_}));
}

SiglipMLPImpl::SiglipMLPImpl(const SiglipVisionOptions& o, const ParamSpec& spec)
    : act_(o.hidden_act) {
  fc1 = register_module("fc1", Linear(o.hidden_size, o.intermediate_size, true, spec));
  fc2 = register_module("fc2", Linear(o.intermediate_size, o.hidden_size, true, spec));
}

torch::Tensor SiglipMLPImpl::forward(const torch::Tensor& x) const {
  return fc2->forward(activation(fc1->forward(x), act_));
}

SiglipEncoderLayerImpl::SiglipEncoderLayerImpl(const SiglipVisionOptions& o, const ParamSpec& spec) {
  layer_norm1 =
      register_module("layer_norm1", SiglipLayerNorm(o.hidden_size, o.layer_norm_eps, spec));
  self_attn = register_module("self_attn", SiglipAttention(o, spec));
  layer_norm2 =
      register_module("layer_norm2", SiglipLayerNorm(o.hidden_size, o.layer_norm_eps, spec));
  mlp = register_module("mlp", SiglipMLP(o, spec));
}

torch::Tensor SiglipEncoderLayerImpl::forward(const torch::Tensor& x) const {
  const auto h = x + self_attn->forward(layer_norm1->forward(x));
  return h + mlp->forward(layer_norm2->forward(h));
}

SiglipEncoderImpl::SiglipEncoderImpl(const SiglipVisionOptions& o, const ParamSpec& spec) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < o.num_hidden_layers; ++i)
    layers->push_back(SiglipEncoderLayer(o, spec));
}

torch::Tensor SiglipEncoderImpl::forward(torch::Tensor x) const {
  for (std::size_t i = 0; i < layers->size(); ++i)
    x = layers->ptr<SiglipEncoderLayerImpl>(i)->forward(x);
  return x;
}

SiglipHeadAttentionImpl::SiglipHeadAttentionImpl(const SiglipVisionOptions& o, const ParamSpec& spec)
    : num_heads_(o.num_attention_heads) {
  in_proj_weight = register_parameter(
      "in_proj_weight", torch::empty({3 * o.hidden_size, o.hidden_size}, spec.options()), false);
  in_proj_bias =
      register_parameter("in_proj_bias", torch::empty({3 * o.hidden_size}, spec.options()), false);
  out_proj = register_module("out_proj", Linear(o.hidden_size, o.hidden_size, true, spec));
}

torch::Tensor SiglipHeadAttentionImpl::forward(const torch::Tensor& query,
                                               const torch::Tensor& key_value) const {
  const auto d = in_proj_weight.size(1);
  const auto w = in_proj_weight.chunk(3, 0);
  const auto bias = in_proj_bias.chunk(3, 0);
  const auto b = query.size(0);
  const auto dh = d / num_heads_;
  auto heads = [&](const torch::Tensor& x, std::size_t i) {
    return torch::linear(x, w[i], bias[i]).view({b, x.size(1), num_heads_, dh}).transpose(1, 2);
  };
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const auto out = models::scaled_dot_product_attention(heads(query, 0), heads(key_value, 1),
                                                        heads(key_value, 2), std::nullopt, scale);
  return out_proj->forward(out.transpose(1, 2).reshape({b, query.size(1), d}));
}

SiglipPoolingHeadImpl::SiglipPoolingHeadImpl(const SiglipVisionOptions& o, const ParamSpec& spec) {
  probe = register_parameter("probe", torch::empty({1, 1, o.hidden_size}, spec.options()), false);
  attention = register_module("attention", SiglipHeadAttention(o, spec));
  layernorm = register_module("layernorm", SiglipLayerNorm(o.hidden_size, o.layer_norm_eps, spec));
  mlp = register_module("mlp", SiglipMLP(o, spec));
}

torch::Tensor SiglipPoolingHeadImpl::forward(const torch::Tensor& hidden) const {
  const auto query = probe.expand({hidden.size(0), 1, probe.size(2)});
  const auto h = attention->forward(query, hidden);
  return (h + mlp->forward(layernorm->forward(h))).select(1, 0);
}

SiglipVisionModelImpl::SiglipVisionModelImpl(const SiglipVisionOptions& options, const ParamSpec& spec)
    : options_(options) {
  embeddings = register_module("embeddings", SiglipVisionEmbeddings(options, spec));
  encoder = register_module("encoder", SiglipEncoder(options, spec));
  post_layernorm = register_module(
      "post_layernorm", SiglipLayerNorm(options.hidden_size, options.layer_norm_eps, spec));
  if (options.use_head) head = register_module("head", SiglipPoolingHead(options, spec));
}

torch::Tensor SiglipVisionModelImpl::forward(const torch::Tensor& pixel_values) const {
  const auto& o = options_;
  if (pixel_values.dim() != 4 || pixel_values.size(1) != o.num_channels ||
      pixel_values.size(2) != o.image_size || pixel_values.size(3) != o.image_size) {
    throw ModelError(fmt::format("SigLIP vision: pixel_values must be [B, {}, {}, {}]",
                                 o.num_channels, o.image_size, o.image_size));
  }
  auto h = embeddings->forward(pixel_values.to(device(), dtype()));
  h = encoder->forward(h);
  return post_layernorm->forward(h);
}

torch::Tensor SiglipVisionModelImpl::pool(const torch::Tensor& last_hidden_state) const {
  if (!head)
    throw ModelError("SigLIP vision: the model has no pooling head (vision_use_head false)");
  return head->forward(last_hidden_state.to(device(), dtype()));
}

SiglipVisionModel load_siglip_vision(const fs::path& dir, torch::ScalarType dtype,
                                     torch::Device device) {
  const auto options = text::options_from_folder<SiglipVisionOptions>(dir);
  SiglipVisionModel model(options, ParamSpec{dtype, torch::kCPU});
  load_vision_tower(dir, model.ptr(), dtype, device);
  return model;
}

void load_vision_tower(const fs::path& dir, const std::shared_ptr<torch::nn::Module>& model,
                       torch::ScalarType dtype, torch::Device device) {
  const auto checkpoint = Checkpoint::open(dir);
  const auto names = checkpoint.names();
  const bool prefixed = std::any_of(names.begin(), names.end(), [](const std::string& n) {
    return n.rfind(kVisionModelPrefix, 0) == 0;
  });
  text::load_state_dict_under(prefixed ? std::string(kVisionModelPrefix) : std::string(), model,
                              checkpoint, dtype, device);
  freeze(*model);
  model->eval();
}

SiglipVisionModel random_siglip_vision(const SiglipVisionOptions& options, std::uint64_t seed,
                                       torch::ScalarType dtype, torch::Device device) {
  return text::random_encoder<SiglipVisionModel>(options, seed, dtype, device);
}

}  // namespace omnidp::models::vision

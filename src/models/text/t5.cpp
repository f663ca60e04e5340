#include "omnidp/models/text/t5.hpp"

#include <cmath>
#include <limits>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::text {
namespace fs = std::filesystem;

namespace {

constexpr const char* kTiedEmbedding = "encoder.embed_tokens.weight";

torch::Tensor activation(const torch::Tensor& x, const std::string& name) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return torch::gelu(x, "tanh");
  if (name == "gelu") return torch::gelu(x);
  if (name == "relu") return torch::relu(x);
  if (name == "silu" || name == "swish") return torch::silu(x);
  throw ModelError("unsupported T5 activation '" + name + "'");
}

// The most negative finite value of a dtype (the reference's torch.finfo(dtype).min mask).
double lowest(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kBFloat16: return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kFloat16: return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case torch::kFloat64: return std::numeric_limits<double>::lowest();
    default: return static_cast<double>(std::numeric_limits<float>::lowest());
  }
}

// T5Block's float16 overflow guard: clamp to the largest finite value (minus 1000 when any
// value is already inf).
torch::Tensor clamp_fp16(const torch::Tensor& x) {
  if (x.scalar_type() != torch::kFloat16) return x;
  const double max = static_cast<double>(std::numeric_limits<c10::Half>::max());
  const double clamp = torch::isinf(x).any().item<bool>() ? max - 1000 : max;
  return x.clamp(-clamp, clamp);
}

}  // namespace

T5Options T5Options::from_json(const nlohmann::json& config, const std::string& origin) {
  T5Options o;
  try {
    o.vocab_size = config.at("vocab_size").get<std::int64_t>();
    o.d_model = config.at("d_model").get<std::int64_t>();
    o.d_kv = config.at("d_kv").get<std::int64_t>();
    o.d_ff = config.at("d_ff").get<std::int64_t>();
    o.num_layers = config.at("num_layers").get<std::int64_t>();
    o.num_heads = config.at("num_heads").get<std::int64_t>();
    o.relative_attention_num_buckets =
        config_value<std::int64_t>(config, "relative_attention_num_buckets", 32, origin);
    o.relative_attention_max_distance =
        config_value<std::int64_t>(config, "relative_attention_max_distance", 128, origin);
    o.layer_norm_epsilon = config_value<double>(config, "layer_norm_epsilon", 1e-6, origin);
    // T5Config: feed_forward_proj "[gated-]act"; "gated-gelu" means gelu_new.
    const auto proj = config_value<std::string>(config, "feed_forward_proj", "relu", origin);
    const bool gated = proj.rfind("gated-", 0) == 0;
    std::string act = gated ? proj.substr(6) : proj;
    if (act == "gelu" && gated) act = "gelu_new";
    o.is_gated_act = config_value<bool>(config, "is_gated_act", gated, origin);
    o.dense_act_fn = config_value<std::string>(config, "dense_act_fn", act, origin);
    const auto model_type = config_value<std::string>(config, "model_type", "t5", origin);
    o.bias_in_every_layer = model_type == "umt5";
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(origin, std::string("invalid T5 config: ") + e.what());
  }
  if (o.d_model <= 0 || o.d_kv <= 0 || o.d_ff <= 0 || o.num_layers <= 0 || o.num_heads <= 0 ||
      o.vocab_size <= 0 || o.relative_attention_num_buckets < 4 ||
      o.relative_attention_max_distance < 2) {
    throw WeightsError(origin, "invalid T5 config: sizes must be positive");
  }
  const auto& a = o.dense_act_fn;
  if (a != "gelu_new" && a != "gelu_pytorch_tanh" && a != "gelu_fast" && a != "gelu" &&
      a != "relu" && a != "silu" && a != "swish") {
    throw WeightsError(origin, "unsupported T5 activation '" + a + "'");
  }
  return o;
}

torch::Tensor relative_position_bucket(const torch::Tensor& relative_position,
                                       std::int64_t num_buckets, std::int64_t max_distance) {
  // Bidirectional: half the buckets for positive offsets (keys after the query).
  const std::int64_t half = num_buckets / 2;
  auto buckets = (relative_position > 0).to(torch::kLong) * half;
  const auto distance = relative_position.abs();
  const std::int64_t max_exact = half / 2;
  const auto is_small = distance < max_exact;
  auto log_ratio = torch::log(distance.to(torch::kFloat32) / static_cast<float>(max_exact)) /
                   static_cast<float>(
                       std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
  log_ratio = log_ratio * static_cast<float>(half - max_exact);
  auto if_large = max_exact + log_ratio.to(torch::kLong);
  if_large = torch::clamp_max(if_large, half - 1);
  return buckets + torch::where(is_small, distance, if_large);
}

T5AttentionImpl::T5AttentionImpl(const T5Options& opts, bool has_relative_attention_bias,
                                 const ParamSpec& spec)
    : num_heads_(opts.num_heads),
      d_kv_(opts.d_kv),
      num_buckets_(opts.relative_attention_num_buckets),
      max_distance_(opts.relative_attention_max_distance) {
  const auto inner = opts.num_heads * opts.d_kv;
  q = register_module("q", Linear(opts.d_model, inner, false, spec));
  k = register_module("k", Linear(opts.d_model, inner, false, spec));
  v = register_module("v", Linear(opts.d_model, inner, false, spec));
  o = register_module("o", Linear(inner, opts.d_model, false, spec));
  if (has_relative_attention_bias) {
    relative_attention_bias =
        register_module("relative_attention_bias",
                        Embedding(opts.relative_attention_num_buckets, opts.num_heads, spec));
  }
}

torch::Tensor T5AttentionImpl::compute_bias(std::int64_t query_length, std::int64_t key_length) const {
  if (!relative_attention_bias) throw ModelError("T5 attention without a relative position table");
  const auto device = relative_attention_bias->weight.device();
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  const auto context = torch::arange(query_length, opts).unsqueeze(1);
  const auto memory = torch::arange(key_length, opts).unsqueeze(0);
  const auto buckets = relative_position_bucket(memory - context, num_buckets_, max_distance_);
  return relative_attention_bias->forward(buckets).permute({2, 0, 1}).unsqueeze(0);  // [1, H, Lq, Lk]
}

torch::Tensor T5AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& bias) const {
  const auto b = x.size(0);
  const auto l = x.size(1);
  auto heads = [&](const Linear& proj) {
    return proj->forward(x).view({b, l, num_heads_, d_kv_}).transpose(1, 2);
  };
  // T5 does not scale the scores (the 1/sqrt(d) is folded into the weights' initialisation).
  const auto out =
      omnidp::models::scaled_dot_product_attention(heads(q), heads(k), heads(v), bias, 1.0);
  return o->forward(out.transpose(1, 2).reshape({b, l, num_heads_ * d_kv_}));
}

T5LayerSelfAttentionImpl::T5LayerSelfAttentionImpl(const T5Options& o,
                                                   bool has_relative_attention_bias,
                                                   const ParamSpec& spec) {
  SelfAttention = register_module("SelfAttention", T5Attention(o, has_relative_attention_bias, spec));
  layer_norm = register_module(
      "layer_norm", RMSNorm(o.d_model, o.layer_norm_epsilon, RmsNormStyle::t5, spec.options()));
}

T5DenseImpl::T5DenseImpl(const T5Options& o, const ParamSpec& spec) : act_(o.dense_act_fn) {
  if (o.is_gated_act) {
    wi_0 = register_module("wi_0", Linear(o.d_model, o.d_ff, false, spec));
    wi_1 = register_module("wi_1", Linear(o.d_model, o.d_ff, false, spec));
  } else {
    wi = register_module("wi", Linear(o.d_model, o.d_ff, false, spec));
  }
  wo = register_module("wo", Linear(o.d_ff, o.d_model, false, spec));
}

torch::Tensor T5DenseImpl::forward(const torch::Tensor& x) const {
  const auto h =
      wi ? activation(wi->forward(x), act_) : activation(wi_0->forward(x), act_) * wi_1->forward(x);
  return wo->forward(h.to(wo->weight.scalar_type()));
}

T5LayerFFImpl::T5LayerFFImpl(const T5Options& o, const ParamSpec& spec) {
  DenseReluDense = register_module("DenseReluDense", T5Dense(o, spec));
  layer_norm = register_module(
      "layer_norm", RMSNorm(o.d_model, o.layer_norm_epsilon, RmsNormStyle::t5, spec.options()));
}

T5BlockImpl::T5BlockImpl(const T5Options& o, bool has_relative_attention_bias, const ParamSpec& spec) {
  self_attention = T5LayerSelfAttention(o, has_relative_attention_bias, spec);
  feed_forward = T5LayerFF(o, spec);
  auto layer = register_module("layer", torch::nn::ModuleList());
  layer->push_back(self_attention);
  layer->push_back(feed_forward);
}

torch::Tensor T5BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& bias) const {
  const auto& sa = *self_attention;
  auto h = clamp_fp16(x + sa.SelfAttention->forward(sa.layer_norm->forward(x), bias));
  const auto& ff = *feed_forward;
  return clamp_fp16(h + ff.DenseReluDense->forward(ff.layer_norm->forward(h)));
}

T5StackImpl::T5StackImpl(const T5Options& o, const ParamSpec& spec) {
  block = register_module("block", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < o.num_layers; ++i)
    block->push_back(T5Block(o, i == 0 || o.bias_in_every_layer, spec));
  final_layer_norm = register_module("final_layer_norm", RMSNorm(o.d_model, o.layer_norm_epsilon,
                                                                 RmsNormStyle::t5, spec.options()));
}

T5EncoderModelImpl::T5EncoderModelImpl(const T5Options& options, const ParamSpec& spec)
    : options_(options) {
  shared = register_module("shared", Embedding(options.vocab_size, options.d_model, spec));
  encoder = register_module("encoder", T5Stack(options, spec));
}

torch::Tensor T5EncoderModelImpl::forward(const torch::Tensor& input_ids,
                                          const torch::Tensor& attention_mask) const {
  if (input_ids.dim() != 2) throw ModelError("T5 encoder: input_ids must be [B, L]");
  const auto l = input_ids.size(1);
  const auto device = shared->weight.device();
  const auto dtype = shared->weight.scalar_type();
  auto h = shared->forward(input_ids.to(device));
  torch::Tensor mask_bias;  // [B, 1, 1, L]: 0 for tokens, the dtype's lowest value for padding
  if (attention_mask.defined()) {
    if (attention_mask.dim() != 2 || attention_mask.sizes() != input_ids.sizes()) {
      throw ModelError("T5 encoder: attention_mask must have the shape of input_ids");
    }
    const auto m = attention_mask.to(device, torch::kFloat32);
    mask_bias = ((1.0 - m) * lowest(dtype)).to(dtype).view({m.size(0), 1, 1, l});
  }
  torch::Tensor bias;
  for (std::size_t i = 0; i < encoder->block->size(); ++i) {
    const auto& blk = encoder->block->ptr<T5BlockImpl>(i);
    const auto& attention = blk->self_attention->SelfAttention;
    if (attention->has_relative_attention_bias()) {
      // T5: block 0's bias serves every block; UMT5: each block its own.
      bias = attention->compute_bias(l, l).to(dtype);
      if (mask_bias.defined()) bias = bias + mask_bias;
    }
    h = blk->forward(h, bias);
  }
  return encoder->final_layer_norm->forward(h);
}

T5EncoderModel load_t5_encoder(const fs::path& dir, torch::ScalarType dtype, torch::Device device) {
  const auto options = options_from_folder<T5Options>(dir);
  const auto checkpoint = Checkpoint::open(dir);
  T5EncoderModel model(options, ParamSpec{dtype, device});  // loaded in place, no host copy
  LoadOptions load;
  load.in_place = true;
  const bool has_shared = checkpoint.contains("shared.weight");
  if (has_shared) {
    // The tied copy (older save_pretrained versions write both) must equal the table.
    load.ignore_unexpected = [](const std::string& name) { return name == kTiedEmbedding; };
  } else {
    load.ignore_missing = [](const std::string& name) { return name == "shared.weight"; };
    load.ignore_unexpected = [](const std::string& name) { return name == kTiedEmbedding; };
    if (!checkpoint.contains(kTiedEmbedding)) {
      throw WeightsError(dir.string(),
                         "checkpoint has neither shared.weight nor " + std::string(kTiedEmbedding));
    }
  }
  load_state_dict(*model, checkpoint, dtype, device, load);
  if (!has_shared) {
    const auto& meta = checkpoint.meta(kTiedEmbedding);
    if (at::IntArrayRef(meta.shape) != model->shared->weight.sizes()) {
      throw WeightsError(dir.string(), std::string(kTiedEmbedding) + " has the wrong shape");
    }
    model->shared->weight.set_data(checkpoint.tensor(kTiedEmbedding, dtype).to(device));
  }
  freeze(*model);
  model->eval();
  return model;
}

T5EncoderModel random_t5_encoder(const T5Options& options, std::uint64_t seed,
                                 torch::ScalarType dtype, torch::Device device) {
  return random_encoder<T5EncoderModel>(options, seed, dtype, device);
}

}  // namespace omnidp::models::text

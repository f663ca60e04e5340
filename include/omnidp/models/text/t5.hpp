#pragma once
// The T5-family encoder stack (transformers' T5EncoderModel / UMT5EncoderModel): token
// embedding `shared`, N blocks of [RMS layer norm -> self-attention with a bucketed relative
// position bias, unscaled scores -> residual] and [RMS layer norm -> (gated) feed-forward ->
// residual], a final RMS layer norm. T5 v1.1 / ByT5 / mT5 have the position-bias table in block
// 0 only (shared by all blocks); UMT5 has one in every block.
//
// Parameter names are the checkpoint's: shared.weight,
// encoder.block.N.layer.0.SelfAttention.{q,k,v,o}.weight,
// encoder.block.N.layer.0.SelfAttention.relative_attention_bias.weight,
// encoder.block.N.layer.0.layer_norm.weight,
// encoder.block.N.layer.1.DenseReluDense.{wi_0,wi_1,wo}.weight (gated) or {wi,wo}.weight,
// encoder.block.N.layer.1.layer_norm.weight, encoder.final_layer_norm.weight.
// Threading: one module per replica, forward() from one thread.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "omnidp/models/layers/rms_norm.hpp"
#include "omnidp/models/text/linear.hpp"

namespace omnidp::models::text {

struct T5Options {
  std::int64_t vocab_size = 32128;
  std::int64_t d_model = 512;
  std::int64_t d_kv = 64;
  std::int64_t d_ff = 2048;
  std::int64_t num_layers = 6;
  std::int64_t num_heads = 8;
  std::int64_t relative_attention_num_buckets = 32;
  std::int64_t relative_attention_max_distance = 128;
  double layer_norm_epsilon = 1e-6;
  std::string dense_act_fn = "relu";  // gelu_new | gelu | gelu_pytorch_tanh | relu | silu
  bool is_gated_act = false;          // DenseGatedActDense (wi_0, wi_1, wo)
  bool bias_in_every_layer = false;   // UMT5

  // From a transformers config.json (model_type t5 / mt5 / umt5; feed_forward_proj
  // "gated-gelu" etc. as T5Config resolves it). Throws WeightsError naming `origin`.
  [[nodiscard]] static T5Options from_json(const nlohmann::json& config, const std::string& origin);
};

// The bucket of each relative position (key - query) for a bidirectional encoder, as
// T5Attention._relative_position_bucket (float32 log arithmetic, truncation toward zero).
[[nodiscard]] torch::Tensor relative_position_bucket(const torch::Tensor& relative_position,
                                                     std::int64_t num_buckets,
                                                     std::int64_t max_distance);

class T5AttentionImpl : public torch::nn::Module {
 public:
  T5AttentionImpl(const T5Options& opts, bool has_relative_attention_bias, const ParamSpec& spec);
  // The [1, H, Lq, Lk] bias of this block's table (requires has_relative_attention_bias).
  [[nodiscard]] torch::Tensor compute_bias(std::int64_t query_length, std::int64_t key_length) const;
  // x [B, L, d_model]; bias [B or 1, H, L, L] additive (position bias + mask), in x's dtype.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& bias) const;
  [[nodiscard]] bool has_relative_attention_bias() const noexcept {
    return !relative_attention_bias.is_empty();
  }

  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  Embedding relative_attention_bias{nullptr};

 private:
  std::int64_t num_heads_;
  std::int64_t d_kv_;
  std::int64_t num_buckets_;
  std::int64_t max_distance_;
};
TORCH_MODULE(T5Attention);

// layer.0: SelfAttention + layer_norm.
class T5LayerSelfAttentionImpl : public torch::nn::Module {
 public:
  T5LayerSelfAttentionImpl(const T5Options& o, bool has_relative_attention_bias,
                           const ParamSpec& spec);
  T5Attention SelfAttention{nullptr};
  RMSNorm layer_norm{nullptr};
};
TORCH_MODULE(T5LayerSelfAttention);

// layer.1: DenseReluDense + layer_norm.
class T5DenseImpl : public torch::nn::Module {
 public:
  T5DenseImpl(const T5Options& o, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  Linear wi{nullptr}, wi_0{nullptr}, wi_1{nullptr}, wo{nullptr};

 private:
  std::string act_;
};
TORCH_MODULE(T5Dense);

class T5LayerFFImpl : public torch::nn::Module {
 public:
  T5LayerFFImpl(const T5Options& o, const ParamSpec& spec);
  T5Dense DenseReluDense{nullptr};
  RMSNorm layer_norm{nullptr};
};
TORCH_MODULE(T5LayerFF);

class T5BlockImpl : public torch::nn::Module {
 public:
  T5BlockImpl(const T5Options& o, bool has_relative_attention_bias, const ParamSpec& spec);
  // bias: the additive [B or 1, H, L, L] attention bias (position bias + padding mask).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& bias) const;
  T5LayerSelfAttention self_attention{nullptr};
  T5LayerFF feed_forward{nullptr};
};
TORCH_MODULE(T5Block);

class T5StackImpl : public torch::nn::Module {
 public:
  T5StackImpl(const T5Options& o, const ParamSpec& spec);
  torch::nn::ModuleList block{nullptr};
  RMSNorm final_layer_norm{nullptr};
};
TORCH_MODULE(T5Stack);

class T5EncoderModelImpl : public torch::nn::Module {
 public:
  explicit T5EncoderModelImpl(const T5Options& options, const ParamSpec& spec = {});

  // input_ids [B, L] (any integer dtype); attention_mask [B, L] (1 = token, 0 = padding) or
  // undefined (all tokens). Returns last_hidden_state [B, L, d_model] in the parameter dtype.
  // Padding positions get values (as the reference) that callers must ignore.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& input_ids,
                                      const torch::Tensor& attention_mask = {}) const;

  [[nodiscard]] const T5Options& options() const noexcept { return options_; }
  [[nodiscard]] torch::ScalarType dtype() const { return shared->weight.scalar_type(); }
  [[nodiscard]] torch::Device device() const { return shared->weight.device(); }

  Embedding shared{nullptr};
  T5Stack encoder{nullptr};

 private:
  T5Options options_;
};
TORCH_MODULE(T5EncoderModel);

// A transformers `text_encoder/` folder (config.json + model.safetensors or shards), loaded
// strictly into `dtype` on `device`. Tied copies of the embedding (`encoder.embed_tokens.weight`)
// are accepted beside or instead of `shared.weight`. Throws WeightsError.
[[nodiscard]] T5EncoderModel load_t5_encoder(const std::filesystem::path& dir,
                                             torch::ScalarType dtype, torch::Device device);
// Seeded bf16-exact random weights (init_random_weights), frozen.
[[nodiscard]] T5EncoderModel random_t5_encoder(const T5Options& options, std::uint64_t seed,
                                               torch::ScalarType dtype, torch::Device device);

}  // namespace omnidp::models::text

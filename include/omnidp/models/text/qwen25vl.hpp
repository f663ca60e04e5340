#pragma once
// The Qwen2.5-VL text model (transformers' Qwen2_5_VLTextModel), text-only: token embedding,
// N decoder layers of [RMSNorm -> causal GQA self-attention (q/k/v with bias, o without) with
// rotary embeddings -> residual] and [RMSNorm -> SwiGLU MLP -> residual], a final RMSNorm.
// The multimodal RoPE (mrope sections over temporal/height/width position ids) reduces to the
// ordinary rotate-half RoPE when all three position ids are equal, as they are for text alone:
// positions are 0..L-1 (what the text model uses when it is given no position ids).
//
// Parameter names are the checkpoint's: embed_tokens.weight,
// layers.N.self_attn.{q,k,v}_proj.{weight,bias}, layers.N.self_attn.o_proj.weight,
// layers.N.mlp.{gate,up,down}_proj.weight, layers.N.{input,post_attention}_layernorm.weight,
// norm.weight.
// Threading: one module per replica, forward() from one thread.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "omnidp/models/layers/rms_norm.hpp"
#include "omnidp/models/text/linear.hpp"

namespace omnidp::models::text {

struct Qwen25VLTextOptions {
  std::int64_t vocab_size = 152064;
  std::int64_t hidden_size = 3584;
  std::int64_t intermediate_size = 18944;
  std::int64_t num_hidden_layers = 28;
  std::int64_t num_attention_heads = 28;
  std::int64_t num_key_value_heads = 4;
  std::int64_t head_dim = 128;
  double rms_norm_eps = 1e-6;
  double rope_theta = 1000000.0;

  // From config.json (top level or its `text_config`; rope_theta at top level or in
  // `rope_parameters`). Sliding-window attention and activations other than silu are refused.
  // Throws WeightsError naming `origin`.
  [[nodiscard]] static Qwen25VLTextOptions from_json(const nlohmann::json& config,
                                                     const std::string& origin);
};

class Qwen25VLAttentionImpl : public torch::nn::Module {
 public:
  Qwen25VLAttentionImpl(const Qwen25VLTextOptions& o, const ParamSpec& spec);
  // x [B, L, hidden]; cos/sin [1, 1, L, head_dim]; mask bool [B, 1, L, L] (true = attend).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                                      const torch::Tensor& sin, const torch::Tensor& mask) const;
  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  std::int64_t heads_;
  std::int64_t kv_heads_;
  std::int64_t head_dim_;
};
TORCH_MODULE(Qwen25VLAttention);

class Qwen2MLPImpl : public torch::nn::Module {
 public:
  Qwen2MLPImpl(const Qwen25VLTextOptions& o, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;  // down(silu(gate(x)) * up(x))
  Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Qwen2MLP);

class Qwen25VLDecoderLayerImpl : public torch::nn::Module {
 public:
  Qwen25VLDecoderLayerImpl(const Qwen25VLTextOptions& o, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos,
                                      const torch::Tensor& sin, const torch::Tensor& mask) const;
  Qwen25VLAttention self_attn{nullptr};
  Qwen2MLP mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(Qwen25VLDecoderLayer);

class Qwen25VLTextModelImpl : public torch::nn::Module {
 public:
  explicit Qwen25VLTextModelImpl(const Qwen25VLTextOptions& options, const ParamSpec& spec = {});

  // The reference's output_hidden_states tuple has num_hidden_layers + 1 entries: the
  // embeddings, the output of each layer but the last, and the normed output of the last layer
  // (= last_hidden_state). hidden_state(ids, mask, i) returns entry i (negative i counts from
  // the end, as Python: HunyuanVideo-1.5 takes -3) and runs only the layers it needs.
  // input_ids [B, L] integer; attention_mask [B, L] (1 = token, 0 = padding) or undefined.
  // The result is in the parameter dtype; padding positions hold values callers must ignore.
  [[nodiscard]] torch::Tensor hidden_state(const torch::Tensor& input_ids,
                                           const torch::Tensor& attention_mask,
                                           std::int64_t index) const;
  // last_hidden_state (= hidden_state(ids, mask, -1)).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& input_ids,
                                      const torch::Tensor& attention_mask = {}) const;

  [[nodiscard]] const Qwen25VLTextOptions& options() const noexcept { return options_; }
  [[nodiscard]] torch::ScalarType dtype() const { return embed_tokens->weight.scalar_type(); }
  [[nodiscard]] torch::Device device() const { return embed_tokens->weight.device(); }

  Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};

 private:
  Qwen25VLTextOptions options_;
};
TORCH_MODULE(Qwen25VLTextModel);

// A transformers folder (config.json + model.safetensors or shards) holding the text model,
// loaded strictly into `dtype` on `device`. The text model's tensors may sit under a prefix
// (`model.`, `language_model.`, `model.language_model.`, as in full Qwen2.5-VL checkpoints);
// then the other parts (vision tower, lm_head) are skipped. Throws WeightsError.
[[nodiscard]] Qwen25VLTextModel load_qwen25vl_text(const std::filesystem::path& dir,
                                                   torch::ScalarType dtype, torch::Device device);
// Seeded bf16-exact random weights (init_random_weights), frozen.
[[nodiscard]] Qwen25VLTextModel random_qwen25vl_text(const Qwen25VLTextOptions& options,
                                                     std::uint64_t seed, torch::ScalarType dtype,
                                                     torch::Device device);

}  // namespace omnidp::models::text

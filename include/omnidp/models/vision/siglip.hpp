#pragma once
// The SigLIP vision tower (transformers' SiglipVisionModel), the image encoder of
// HunyuanVideo-1.5 image-to-video (so400m-patch14-384: hidden 1152, 27 layers, 16 heads,
// 729 tokens). Patch embedding (Conv2d, kernel = stride = patch_size) plus a learned position
// embedding per patch; N pre-LN encoder layers [layer_norm1 -> self-attention (q/k/v/out_proj
// with biases, scores scaled by head_dim^-0.5, no mask) -> residual; layer_norm2 -> fc1 ->
// activation -> fc2 -> residual]; post_layernorm. The attention-pooling head (`head.*`,
// vision_use_head) is loaded and can be run (pool()); the video pipelines use last_hidden_state.
//
// Parameter names are transformers': embeddings.patch_embedding.{weight,bias},
// embeddings.position_embedding.weight, encoder.layers.N.{layer_norm1,layer_norm2}.{weight,bias},
// encoder.layers.N.self_attn.{q_proj,k_proj,v_proj,out_proj}.{weight,bias},
// encoder.layers.N.mlp.{fc1,fc2}.{weight,bias}, post_layernorm.{weight,bias},
// head.{probe, attention.in_proj_weight, attention.in_proj_bias, attention.out_proj.*,
// layernorm.*, mlp.fc1.*, mlp.fc2.*}; in a checkpoint all of them with or without the
// `vision_model.` prefix (both layouts are written by save_pretrained, by version).
// Device- and dtype-agnostic (the parameters' device and dtype). Threading: one module per
// replica, forward() from one thread.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "omnidp/models/text/linear.hpp"

namespace omnidp::models::vision {

// The prefix of a vision tower's weights in a full CLIP/SigLIP checkpoint ("vision_model.").
inline constexpr const char* kVisionModelPrefix = "vision_model.";

// Loads a vision tower from the checkpoint in `dir` in place, nested under kVisionModelPrefix
// where the checkpoint's names are (a full CLIPVisionModel/SiglipVisionModel save), else bare,
// so that the strict loader sees the checkpoint's names (a mix is reported as unexpected and
// missing tensors); then frozen and in eval mode. WeightsError as load_state_dict.
void load_vision_tower(const std::filesystem::path& dir,
                       const std::shared_ptr<torch::nn::Module>& model, torch::ScalarType dtype,
                       torch::Device device);

struct SiglipVisionOptions {
  std::int64_t hidden_size = 768;
  std::int64_t intermediate_size = 3072;
  std::int64_t num_hidden_layers = 12;
  std::int64_t num_attention_heads = 12;
  std::int64_t num_channels = 3;
  std::int64_t image_size = 224;
  std::int64_t patch_size = 16;
  double layer_norm_eps = 1e-6;
  std::string hidden_act = "gelu_pytorch_tanh";  // gelu_pytorch_tanh | gelu_new | gelu | quick_gelu
  bool use_head = true;                          // vision_use_head

  [[nodiscard]] std::int64_t num_patches() const noexcept {
    return (image_size / patch_size) * (image_size / patch_size);
  }
  [[nodiscard]] std::int64_t head_dim() const noexcept { return hidden_size / num_attention_heads; }

  // From a transformers config.json: SiglipVisionConfig itself (model_type
  // siglip_vision_model) or a SiglipConfig with a nested `vision_config`. hidden_size,
  // intermediate_size, num_hidden_layers, num_attention_heads, image_size and patch_size are
  // required; the others default as in transformers. Throws WeightsError naming `origin` and
  // the key for a missing, mistyped or unsupported value.
  [[nodiscard]] static SiglipVisionOptions from_json(const nlohmann::json& config,
                                                     const std::string& origin);
};

// y = layer_norm(x) over the last dimension, with weight and bias.
class SiglipLayerNormImpl : public torch::nn::Module {
 public:
  SiglipLayerNormImpl(std::int64_t dim, double eps, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  torch::Tensor weight;
  torch::Tensor bias;

 private:
  double eps_;
};
TORCH_MODULE(SiglipLayerNorm);

// Conv2d with kernel = stride = patch_size, no padding: weight [hidden, C, P, P], bias [hidden].
class SiglipPatchConvImpl : public torch::nn::Module {
 public:
  SiglipPatchConvImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  torch::Tensor weight;
  torch::Tensor bias;

 private:
  std::int64_t patch_size_;
};
TORCH_MODULE(SiglipPatchConv);

class SiglipVisionEmbeddingsImpl : public torch::nn::Module {
 public:
  SiglipVisionEmbeddingsImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  // pixel_values [B, C, image_size, image_size] -> [B, num_patches, hidden] (row-major patches).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& pixel_values) const;

  SiglipPatchConv patch_embedding{nullptr};
  text::Embedding position_embedding{nullptr};
};
TORCH_MODULE(SiglipVisionEmbeddings);

class SiglipAttentionImpl : public torch::nn::Module {
 public:
  SiglipAttentionImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  // x [B, L, hidden] -> [B, L, hidden], every token attends to every token.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, out_proj{nullptr};

 private:
  std::int64_t num_heads_;
  std::int64_t head_dim_;
};
TORCH_MODULE(SiglipAttention);

// fc1 -> activation -> fc2.
class SiglipMLPImpl : public torch::nn::Module {
 public:
  SiglipMLPImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  Linear fc1{nullptr}, fc2{nullptr};

 private:
  std::string act_;
};
TORCH_MODULE(SiglipMLP);

class SiglipEncoderLayerImpl : public torch::nn::Module {
 public:
  SiglipEncoderLayerImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  SiglipLayerNorm layer_norm1{nullptr};
  SiglipAttention self_attn{nullptr};
  SiglipLayerNorm layer_norm2{nullptr};
  SiglipMLP mlp{nullptr};
};
TORCH_MODULE(SiglipEncoderLayer);

class SiglipEncoderImpl : public torch::nn::Module {
 public:
  SiglipEncoderImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(torch::Tensor x) const;
  torch::nn::ModuleList layers{nullptr};
};
TORCH_MODULE(SiglipEncoder);

// torch's nn.MultiheadAttention as the head holds it: packed in_proj_weight [3D, D] and
// in_proj_bias [3D] (q, k, v rows in that order), out_proj.
class SiglipHeadAttentionImpl : public torch::nn::Module {
 public:
  SiglipHeadAttentionImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  // query [B, Lq, D], key_value [B, L, D] -> [B, Lq, D].
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& query,
                                      const torch::Tensor& key_value) const;
  torch::Tensor in_proj_weight;
  torch::Tensor in_proj_bias;
  Linear out_proj{nullptr};

 private:
  std::int64_t num_heads_;
};
TORCH_MODULE(SiglipHeadAttention);

// MultiheadAttentionPoolingHead: the learned probe attends over the tokens, then
// layernorm -> mlp with a residual; the probe's row is the pooled output.
class SiglipPoolingHeadImpl : public torch::nn::Module {
 public:
  SiglipPoolingHeadImpl(const SiglipVisionOptions& o, const ParamSpec& spec);
  // hidden [B, L, D] -> [B, D].
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& hidden) const;

  torch::Tensor probe;  // [1, 1, D]
  SiglipHeadAttention attention{nullptr};
  SiglipLayerNorm layernorm{nullptr};
  SiglipMLP mlp{nullptr};
};
TORCH_MODULE(SiglipPoolingHead);

class SiglipVisionModelImpl : public torch::nn::Module {
 public:
  explicit SiglipVisionModelImpl(const SiglipVisionOptions& options, const ParamSpec& spec = {});

  // pixel_values [B, C, image_size, image_size] (any float dtype/device: converted to the
  // parameters') -> last_hidden_state [B, num_patches, hidden] in the parameter dtype.
  // Throws ModelError for another shape.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& pixel_values) const;
  // The head's pooler_output [B, hidden] of a last_hidden_state. Throws ModelError without a head.
  [[nodiscard]] torch::Tensor pool(const torch::Tensor& last_hidden_state) const;

  [[nodiscard]] const SiglipVisionOptions& options() const noexcept { return options_; }
  [[nodiscard]] torch::ScalarType dtype() const { return post_layernorm->weight.scalar_type(); }
  [[nodiscard]] torch::Device device() const { return post_layernorm->weight.device(); }

  SiglipVisionEmbeddings embeddings{nullptr};
  SiglipEncoder encoder{nullptr};
  SiglipLayerNorm post_layernorm{nullptr};
  SiglipPoolingHead head{nullptr};  // null without vision_use_head

 private:
  SiglipVisionOptions options_;
};
TORCH_MODULE(SiglipVisionModel);

// A transformers `image_encoder/` folder (config.json + model.safetensors, or shards with
// model.safetensors.index.json), loaded strictly into `dtype` on `device`: every parameter
// must be in the checkpoint and every checkpoint tensor must be a parameter (names with or
// without `vision_model.`). Throws WeightsError.
[[nodiscard]] SiglipVisionModel load_siglip_vision(const std::filesystem::path& dir,
                                                   torch::ScalarType dtype, torch::Device device);
// Seeded bf16-exact random weights (init_random_weights), frozen.
[[nodiscard]] SiglipVisionModel random_siglip_vision(const SiglipVisionOptions& options,
                                                     std::uint64_t seed, torch::ScalarType dtype,
                                                     torch::Device device);

}  // namespace omnidp::models::vision

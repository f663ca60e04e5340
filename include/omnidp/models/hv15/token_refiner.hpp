#pragma once
// HunyuanVideo-1.5's token refiner (Diffusers `HunyuanVideo15TokenRefiner`, the transformer's
// `context_embedder`): the Qwen2.5-VL embeddings' pooled (masked mean) text and timestep
// conditioning, proj_in, then refiner blocks of self-attention and a SiLU FFN, each gated by
// the conditioning. Submodules carry the checkpoint's names.
// Threading: as any torch::nn::Module; forward() is inference only.

#include <torch/torch.h>

#include <cstdint>

#include "omnidp/models/layers/feed_forward.hpp"
#include "omnidp/models/layers/linear.hpp"
#include "omnidp/models/layers/timestep_embedding.hpp"

namespace omnidp::models::hv15 {

// The token refiner's self-attention (diffusers Attention with AttnProcessor2_0): to_q, to_k,
// to_v, to_out.0. key_mask [B, L] bool or undefined.
class RefinerAttentionImpl : public torch::nn::Module {
 public:
  RefinerAttentionImpl(std::int64_t heads, std::int64_t head_dim);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& key_mask);

 private:
  std::int64_t heads_;
  Linear to_q_{nullptr}, to_k_{nullptr}, to_v_{nullptr}, to_out_{nullptr};
};
TORCH_MODULE(RefinerAttention);

class RefinerBlockImpl : public torch::nn::Module {
 public:
  RefinerBlockImpl(std::int64_t heads, std::int64_t head_dim, double mlp_ratio);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& temb,
                                      const torch::Tensor& key_mask);

 private:
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  RefinerAttention attn_{nullptr};
  FeedForward ff_{nullptr};
  Linear norm_out_{nullptr};  // norm_out.linear
};
TORCH_MODULE(RefinerBlock);

// `context_embedder`: pooled (masked mean) text + timestep conditioning, proj_in, refiner
// blocks. mask [B, L] bool or undefined (all valid).
class TokenRefinerImpl : public torch::nn::Module {
 public:
  TokenRefinerImpl(std::int64_t in_channels, std::int64_t heads, std::int64_t head_dim,
                   std::int64_t num_layers, double mlp_ratio);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& timestep,
                                      const torch::Tensor& mask);

 private:
  EmbeddingMlp time_embedder_{nullptr};  // time_text_embed.timestep_embedder
  EmbeddingMlp text_embedder_{nullptr};  // time_text_embed.text_embedder
  Linear proj_in_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};  // token_refiner.refiner_blocks
};
TORCH_MODULE(TokenRefiner);

}  // namespace omnidp::models::hv15

#include "omnidp/models/hv15/token_refiner.hpp"

#include "omnidp/models/layers/attention_layer.hpp"

namespace omnidp::models::hv15 {
RefinerAttentionImpl::RefinerAttentionImpl(std::int64_t heads, std::int64_t head_dim)
    : heads_(heads) {
  const auto dim = heads * head_dim;
  to_q_ = register_linear(*this, "to_q", dim, dim);
  to_k_ = register_linear(*this, "to_k", dim, dim);
  to_v_ = register_linear(*this, "to_v", dim, dim);
  auto out = register_container(*this, "to_out");
  to_out_ = register_linear(*out, "0", dim, dim);
}

torch::Tensor RefinerAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& key_mask) {
  const auto q = to_q_(x).unflatten(2, {heads_, -1});
  const auto k = to_k_(x).unflatten(2, {heads_, -1});
  const auto v = to_v_(x).unflatten(2, {heads_, -1});
  return to_out_(masked_attention(q, k, v, key_mask));
}

RefinerBlockImpl::RefinerBlockImpl(std::int64_t heads, std::int64_t head_dim, double mlp_ratio) {
  const auto dim = heads * head_dim;
  const auto layer_norm = [&](const char* name, std::int64_t width) {
    return register_module(name,
                           torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(1e-6)));
  };
  norm1_ = layer_norm("norm1", dim);
  attn_ = register_module("attn", RefinerAttention(heads, head_dim));
  norm2_ = layer_norm("norm2", dim);
  ff_ = register_module(
      "ff", FeedForward(dim, ffn_width(dim, mlp_ratio), FeedForwardActivation::silu, TensorShard{},
                        ParamSpec{}, "HunyuanVideo15Transformer3DModel"));
  auto norm_out = register_container(*this, "norm_out");
  norm_out_ = register_linear(*norm_out, "linear", dim, 2 * dim);
}

torch::Tensor RefinerBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& temb,
                                        const torch::Tensor& key_mask) {
  const auto attn_out = attn_(norm1_(x), key_mask);
  const auto gates = norm_out_(torch::silu(temb)).chunk(2, 1);
  auto h = x + attn_out * gates[0].unsqueeze(1);
  h = h + ff_(norm2_(h)) * gates[1].unsqueeze(1);
  return h;
}

TokenRefinerImpl::TokenRefinerImpl(std::int64_t in_channels, std::int64_t heads,
                                   std::int64_t head_dim, std::int64_t num_layers, double mlp_ratio) {
  const auto dim = heads * head_dim;
  auto tte = register_container(*this, "time_text_embed");
  time_embedder_ =
      tte->register_module("timestep_embedder", EmbeddingMlp(256, dim, EmbeddingActivation::silu));
  text_embedder_ = tte->register_module("text_embedder",
                                        EmbeddingMlp(in_channels, dim, EmbeddingActivation::silu));
  proj_in_ = register_linear(*this, "proj_in", in_channels, dim);
  auto refiner = register_container(*this, "token_refiner");
  blocks_ = refiner->register_module("refiner_blocks", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < num_layers; ++i)
    blocks_->push_back(RefinerBlock(heads, head_dim, mlp_ratio));
}

torch::Tensor TokenRefinerImpl::forward(const torch::Tensor& x, const torch::Tensor& timestep,
                                        const torch::Tensor& mask) {
  // Masked mean in float32 (as the reference); without a mask every token is valid.
  torch::Tensor pooled;
  if (mask.defined()) {
    const auto m = mask.to(torch::kFloat32).unsqueeze(-1);
    pooled = ((x * m).sum(1) / m.sum(1)).to(x.scalar_type());
  } else {
    pooled = (x.to(torch::kFloat32).sum(1) / static_cast<double>(x.size(1))).to(x.scalar_type());
  }
  const auto t = timestep_sinusoid(timestep, 256).to(pooled.scalar_type());
  const auto temb = time_embedder_->forward(t) + text_embedder_->forward(pooled);
  auto h = proj_in_(x);
  for (const auto& block : *blocks_) h = block->as<RefinerBlock>()->forward(h, temb, mask);
  return h;
}

}  // namespace omnidp::models::hv15

#pragma once
// HunyuanVideo-1.5 diffusion transformer (Diffusers `HunyuanVideo15Transformer3DModel`):
// patch embedding over [latent, condition latent, mask] channels, a token refiner over the
// Qwen2.5-VL embeddings, the byT5 glyph MLP, the SigLIP image projection, `cond_type_embed`,
// double-stream blocks with joint attention (per-head RMSNorm on q/k, 3D RoPE on video tokens
// only) and the AdaLN output head. Submodules are registered with the checkpoint's names, so
// `load_state_dict` reads a Diffusers `transformer/` folder unchanged.
//
// Not thread-safe (one replica per thread); the forward pass is a pure function of its inputs
// and the weights, so it is deterministic under deterministic kernels.

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "omnidp/collective/collective.hpp"
#include "omnidp/models/hv15/configs.hpp"
#include "omnidp/models/hv15/text_layout.hpp"
#include "omnidp/models/hv15/token_refiner.hpp"
#include "omnidp/models/hv15/transformer_inputs.hpp"
#include "omnidp/models/layers/feed_forward.hpp"
#include "omnidp/models/layers/linear.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/layers/parallel_state.hpp"
#include "omnidp/models/layers/quantization.hpp"
#include "omnidp/models/layers/rms_norm.hpp"
#include "omnidp/models/layers/rope.hpp"
#include "omnidp/models/layers/tensor_parallel.hpp"
#include "omnidp/models/layers/timestep_embedding.hpp"
#include "omnidp/models/layers/ulysses.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models {
class StepCache;  // pipelines/step_cache.hpp
}  // namespace omnidp::models

namespace omnidp::models::hv15 {

// --- building blocks (public for module tests) -------------------------------------------

// The video tokens' 3-D RoPE (layers/rope.hpp): rope_axes_dim and rope_theta of the options,
// float32 tables on the model's device, as the reference computes them.
[[nodiscard]] Rope3dOptions hv15_rope_options(const TransformerOptions& options);

// Joint attention of a double-stream block. `text` says which text tokens are keys;
// freqs are the video tokens' RoPE rotations. With an active `sequence` shard, x (and freqs)
// are this rank's video tokens: they are exchanged to this rank's head shard of every
// token, the replicated text's q/k/v are head-sliced locally, and the text output is gathered
// over the heads, so `context` stays the same on every rank. Built for a tensor shard it holds
// heads/n heads: to_q/k/v and add_q/k/v_proj column-split, to_out.0 and to_add_out row-split
// (one all-reduce over the tensor group for both); the per-head norms are whole on every rank.
class JointAttentionImpl : public torch::nn::Module, public TensorParallelLayer {
 public:
  JointAttentionImpl(std::int64_t heads, std::int64_t head_dim, TensorShard shard = {});
  [[nodiscard]] std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x,
                                                                 const torch::Tensor& context,
                                                                 const TextKeys& text,
                                                                 const torch::Tensor& freqs,
                                                                 const SequenceShard& sequence = {});
  // Its projections declare their own slices; the attention keeps the group to reduce both
  // output projections in one all-reduce.
  [[nodiscard]] std::vector<std::pair<std::string, TensorSlice>> parameter_slices() const override {
    return {};
  }
  void bind_tensor_group(Collective* group) override { out_.bind_tensor_group(group); }

 private:
  std::int64_t heads_;  // this shard's
  // Column-split (this shard's heads): the video stream's and the text stream's q, k, v.
  ColumnParallelLinear to_q_{nullptr}, to_k_{nullptr}, to_v_{nullptr};
  ColumnParallelLinear add_q_proj_{nullptr}, add_k_proj_{nullptr}, add_v_proj_{nullptr};
  RMSNorm norm_q_{nullptr}, norm_k_{nullptr}, norm_added_q_{nullptr}, norm_added_k_{nullptr};
  // Row-split: to_out.0 and to_add_out, reduced together by out_.
  RowParallelLinear to_out_{nullptr}, to_add_out_{nullptr};
  JointRowParallelLinear out_;
};
TORCH_MODULE(JointAttention);

class DoubleStreamBlockImpl : public torch::nn::Module {
 public:
  DoubleStreamBlockImpl(std::int64_t heads, std::int64_t head_dim, double mlp_ratio,
                        TensorShard shard = {});
  [[nodiscard]] std::tuple<torch::Tensor, torch::Tensor> forward(
      const torch::Tensor& x, const torch::Tensor& context, const torch::Tensor& temb,
      const TextKeys& text, const torch::Tensor& freqs, const SequenceShard& sequence = {});

 private:
  Linear norm1_{nullptr}, norm1_context_{nullptr};  // *.linear (AdaLayerNormZero)
  JointAttention attn_{nullptr};
  FeedForward ff_{nullptr}, ff_context_{nullptr};
  std::int64_t dim_;
};
TORCH_MODULE(DoubleStreamBlock);

// --- the model ----------------------------------------------------------------------------

class HunyuanVideo15Transformer3DModelImpl : public torch::nn::Module {
 public:
  // shard: this rank's tensor shard (docs/models.md, "Tensor parallelism"): the double-stream
  // blocks' attention and FFNs are split (shard_plan()); the embedders, the token
  // refiner, the modulation and the output head are replicated. ConfigError when shard.size
  // does not divide num_attention_heads (or the FFN width).
  explicit HunyuanVideo15Transformer3DModelImpl(TransformerOptions options, TensorShard shard = {});

  // The groups this rank runs in (layers/parallel_state.hpp), bound before forward(): the
  // tensor group must run this shard (ModelError), the tensor and sequence groups must split
  // the heads (ConfigError); null axes: one rank. With a sequence group every forward is
  // Ulysses over it (docs/runtime.md, "Sequence parallel"): the video tokens sharded, the
  // text tokens replicated; every rank passes the same inputs and gets the whole output.
  void bind_parallel(const ParallelState& state);
  [[nodiscard]] const TensorShard& tensor_shard() const noexcept { return shard_; }
  // The checkpoint tensors this shard holds a slice of (LoadOptions::shard, init_random_weights):
  // the slices its parallel layers declare (layer_shard_plan): in every block the attention's
  // to_q/k/v and add_q/k/v_proj and the FFNs' net.0.proj along dim 0, to_out.0, to_add_out
  // and net.2 weights along dim 1. Empty for an unsharded model.
  [[nodiscard]] ShardPlan shard_plan();

  // Returns the velocity prediction [B, out_channels, F, H, W] in the weights' dtype.
  // Throws ModelError for inconsistent shapes (naming the input). `cache`: the request
  // branch's step cache the double-stream blocks run through (pipelines/step_cache.hpp), or
  // null.
  [[nodiscard]] torch::Tensor forward(const TransformerInputs& inputs, StepCache* cache = nullptr);

  [[nodiscard]] const TransformerOptions& options() const noexcept { return options_; }
  // model.quantization fp8 (docs/models.md, "FP8"), the plan of layers/quantization.hpp over
  // transformer_blocks (its `blocks` is set here): every double-stream block's attention
  // projections and FFN layers to W8A8 FP8 GEMMs; the embedders, the token refiner, the
  // modulation and the output head stay in the weights' dtype; so do the plan's edge blocks.
  // After the weights are loaded; a second call replaces the first plan. ModelError where
  // fp8_unavailable_reason() (the CPU, libtorch < 2.5) or the plan's edge blocks are negative.
  void quantize_fp8(Fp8Plan plan = {});
  void set_text_padding(TextPadding padding) noexcept { padding_ = padding; }
  [[nodiscard]] TextPadding text_padding() const noexcept { return padding_; }

 private:
  // The embedded text tokens of `in` in `layout` (hv15/text_layout.hpp).
  [[nodiscard]] TextTokens build_context(const TransformerInputs& in, const torch::Tensor& timestep,
                                         TextPadding layout);
  // The ragged layout: each entry's drop-layout tokens, padded (pad_entries).
  [[nodiscard]] TextTokens ragged_context(const TransformerInputs& in, const torch::Tensor& timestep);

  TransformerOptions options_;
  TensorShard shard_;
  ParallelState parallel_;
  TextPadding padding_ = TextPadding::automatic;

  torch::nn::Conv3d x_embedder_{nullptr};  // x_embedder.proj
  torch::nn::LayerNorm image_norm_in_{nullptr}, image_norm_out_{nullptr};
  Linear image_l1_{nullptr}, image_l2_{nullptr};
  TokenRefiner context_embedder_{nullptr};
  torch::nn::LayerNorm byt5_norm_{nullptr};
  Linear byt5_l1_{nullptr}, byt5_l2_{nullptr}, byt5_l3_{nullptr};
  EmbeddingMlp time_embedder_{nullptr};    // time_embed.timestep_embedder
  EmbeddingMlp time_r_embedder_{nullptr};  // time_embed.timestep_embedder_r (use_meanflow)
  torch::nn::Embedding cond_type_embed_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};  // transformer_blocks
  Linear norm_out_{nullptr};               // norm_out.linear (AdaLayerNormContinuous)
  Linear proj_out_{nullptr};

  Rope3d rope_;
};
TORCH_MODULE(HunyuanVideo15Transformer3DModel);

}  // namespace omnidp::models::hv15

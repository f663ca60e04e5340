#pragma once
// WanTransformer3DModel: the Wan2.1 / Wan2.2 video DiT as Diffusers implements it
// (models/transformers/transformer_wan.py), with Wan2.1 image-to-video's CLIP image tokens
// (image_dim: an image embedder, and added K/V projections in every cross-attention).
//
// Parameter names equal the Diffusers checkpoint names (`patch_embedding.weight`,
// `condition_embedder.time_embedder.linear_1.weight`, `blocks.N.attn1.to_out.0.weight`,
// `blocks.N.ffn.net.0.proj.weight`, `scale_shift_table`, ...), so a snapshot's
// `transformer/` folder loads strictly into it.
//
// Numerics follow the reference: LayerNorms, modulation and residual updates in float32;
// projections in the module's dtype. `to_dtype()` keeps the reference's fp32 modules
// (time_embedder, scale_shift_table, norm*) in float32 when the rest goes to bf16/fp16.
//
// Threading: a module is used by one thread at a time (the worker); forward() is inference
// only (call under torch::NoGradGuard / InferenceMode).

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/collective/collective.hpp"
#include "omnidp/models/layers/dit_attention.hpp"
#include "omnidp/models/layers/feed_forward.hpp"
#include "omnidp/models/layers/fp8.hpp"
#include "omnidp/models/layers/head_norm.hpp"
#include "omnidp/models/layers/linear.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/layers/parallel_state.hpp"
#include "omnidp/models/layers/param_spec.hpp"
#include "omnidp/models/layers/placement.hpp"
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

namespace omnidp::models::wan {

// The fields of a Diffusers `transformer/config.json` for WanTransformer3DModel.
struct WanTransformerOptions {
  std::array<std::int64_t, 3> patch_size{1, 2, 2};
  std::int64_t num_attention_heads = 40;
  std::int64_t attention_head_dim = 128;
  std::int64_t in_channels = 16;
  std::int64_t out_channels = 16;
  std::int64_t text_dim = 4096;
  std::int64_t freq_dim = 256;
  std::int64_t ffn_dim = 13824;
  std::int64_t num_layers = 40;
  bool cross_attn_norm = true;
  double eps = 1e-6;
  std::int64_t rope_max_seq_len = 1024;
  double rope_theta = 10000.0;  // fixed in the reference, not a config field
  // Wan2.1 image-to-video (CLIP image tokens, 0 = none): the image embedder's input width
  // (1280), the cross-attention's added K/V projections' input width (the inner dim), and the
  // image embedder's learned positions (first-last-frame: 2 x 257 tokens).
  std::int64_t image_dim = 0;
  std::int64_t added_kv_proj_dim = 0;
  std::int64_t pos_embed_seq_len = 0;

  [[nodiscard]] std::int64_t inner_dim() const noexcept {
    return num_attention_heads * attention_head_dim;
  }
  [[nodiscard]] bool image_tokens() const noexcept { return image_dim > 0; }

  // Parses config.json text. Unsupported variants (qk_norm other than rms_norm_across_heads;
  // image_dim without added_kv_proj_dim or the reverse, added_kv_proj_dim other than the inner
  // dim, pos_embed_seq_len without image_dim: no released checkpoint), bad JSON and
  // inconsistent dimensions are WeightsErrors naming `origin` (models/config_json.hpp).
  [[nodiscard]] static WanTransformerOptions from_json_text(const std::string& text,
                                                            const std::string& origin);
  [[nodiscard]] static WanTransformerOptions from_file(const std::filesystem::path& config_json);
};

// WanRotaryPosEmbed as a shared 3-D RoPE (layers/rope.hpp): float64 tables on the CPU over
// head-dim shares t = D - 4(D/6), h = w = 2(D/6), read split as [D - 2(D/3), D/3, D/3] (the
// reference's split, kept where the two differ), positions up to rope_max_seq_len.
[[nodiscard]] Rope3dOptions wan_rope_options(const WanTransformerOptions& options);

// Groups of tokens that share a timestep, so that the time embedding and the modulation are
// computed once per group and broadcast: timestep [B] -> ([B, 1], 1); [B, N] constant per
// sample -> ([B, 1], 1); constant within each of the `frames` latent frames (Wan2.2 TI2V:
// the conditioned first frame has t = 0) -> ([B, frames], frames); otherwise ([B, N], N).
// Tokens are frame-major, so group g is tokens [g*N/G, (g+1)*N/G). Compares on the device
// (one synchronisation). With fused_elementwise() off, per-token timesteps stay per token.
[[nodiscard]] std::pair<torch::Tensor, std::int64_t> wan_timestep_groups(const torch::Tensor& timestep,
                                                                         std::int64_t frames);

// One block's request-invariant tensors (WanTransformerBlock::prepare), reused at every step.
struct WanPreparedBlock {
  KeyValues context_kv;         // attn2's keys (after norm_k) and values of the text
  KeyValues image_kv;           // attn2's added keys (after norm_added_k) and values of the
                                // image tokens; undefined without image tokens
  torch::Tensor self_out_bias;  // attn1->folded_out_bias() where attn1 defers its biases
};

class WanTransformerBlockImpl : public torch::nn::Module {
 public:
  // shard: this rank's tensor shard (attn1, attn2 and ffn split; the rest replicated).
  // spec: where the parameters live (norm2 and scale_shift_table stay float32 on its device).
  explicit WanTransformerBlockImpl(const WanTransformerOptions& options, TensorShard shard = {},
                                   const ParamSpec& spec = {});
  // x [B, N, dim] contiguous; context [B, L, dim] (already text-embedded); temb_proj
  // [B, G, 6, dim], one per group of N/G consecutive tokens (wan_timestep_groups); rope_freqs
  // [N, 1, head_dim/2]. Elementwise work is fused per libtorch's ability (layers/fused.hpp).
  // With an active `sequence` shard, N is this rank's token shard (self-attention exchanges it).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context,
                                      const torch::Tensor& temb_proj, const torch::Tensor& rope_freqs,
                                      const SequenceShard& sequence = {});
  // The same with the block's request-invariant part prepared (prepare(context)).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const WanPreparedBlock& prepared,
                                      const torch::Tensor& temb_proj, const torch::Tensor& rope_freqs,
                                      const SequenceShard& sequence = {});
  // The cross-attention's keys and values of context [B, L, dim] (and of the embedded image
  // tokens [B, Li, dim] where defined), and the folded self-attention output bias where attn1
  // defers its biases.
  [[nodiscard]] WanPreparedBlock prepare(const torch::Tensor& context,
                                         const torch::Tensor& image = {});

  // attn1, attn2: Diffusers' WanAttention (layers/dit_attention.hpp); attn2 with the added
  // K/V projections of the image tokens where added_kv_proj_dim.
  SelfAttention attn1{nullptr};
  CrossAttention attn2{nullptr};
  torch::nn::LayerNorm norm2{nullptr};  // only with cross_attn_norm
  FeedForward ffn{nullptr};             // Diffusers' FeedForward, gelu-approximate, inner ffn_dim
  torch::Tensor scale_shift_table;      // [1, 6, dim]

 private:
  std::int64_t dim_;
  double eps_;
};
TORCH_MODULE(WanTransformerBlock);

// WanImageEmbedding: CLIP image tokens [B, Li, image_dim] (+ pos_embed where the checkpoint has
// it: first-last-frame, Li = pos_embed_seq_len) -> norm1 -> ff (exact GELU, image_dim ->
// image_dim -> dim) -> norm2 -> [B, Li, dim]. The norms are Diffusers' FP32LayerNorm (eps 1e-5,
// float32 weights and math, the result in the input's dtype).
class WanImageEmbeddingImpl : public torch::nn::Module {
 public:
  WanImageEmbeddingImpl(const WanTransformerOptions& options, const ParamSpec& spec = {});
  // ModelError for another width, or a token count other than pos_embed_seq_len.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& image) const;
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  FeedForward ff{nullptr};
  torch::Tensor pos_embed;  // [1, pos_embed_seq_len, image_dim], or undefined
};
TORCH_MODULE(WanImageEmbedding);

// WanTimeTextImageEmbedding: the time, text and (image_dim) image embeddings.
class WanConditionEmbedderImpl : public torch::nn::Module {
 public:
  // time_embedder stays float32 on spec's device.
  explicit WanConditionEmbedderImpl(const WanTransformerOptions& options, const ParamSpec& spec = {});
  EmbeddingMlp time_embedder{nullptr};  // Diffusers' TimestepEmbedding (SiLU)
  Linear time_proj{nullptr};
  EmbeddingMlp text_embedder{nullptr};        // PixArtAlphaTextProjection (GELU tanh)
  WanImageEmbedding image_embedder{nullptr};  // with image_dim only

 private:
  std::int64_t freq_dim_;
  friend class WanTransformer3DModelImpl;
};
TORCH_MODULE(WanConditionEmbedder);

// The part of a forward that does not change within a request: every block's cross-attention
// keys and values of the text-embedded context, and its folded self-attention output bias. A
// pipeline prepares it once per request and reuses it at every denoising step, saving the text
// embedding and the k/v projections of 512 tokens in all 30 blocks per step.
struct WanPreparedContext {
  std::int64_t batch = 0;
  torch::ScalarType dtype = torch::kFloat32;  // the context's: the time embedding is cast to it
  std::vector<WanPreparedBlock> blocks;
};

class WanTransformer3DModelImpl : public torch::nn::Module {
 public:
  // shard: this rank's tensor shard (docs/models.md, "Tensor parallelism"): the blocks'
  // attention and FFN are split (shard_plan()), everything else is replicated.
  // ConfigError when shard.size does not divide num_attention_heads or ffn_dim.
  // spec: the parameters are allocated (zero, or libtorch's init for the patch embedding) in
  // spec's dtype on its device, except those the reference keeps in float32 (the time
  // embedder, the scale-shift tables, the blocks' norm2): the layout to_dtype(device, dtype)
  // gives, so that a checkpoint loads in place with no float32 copy on the host.
  explicit WanTransformer3DModelImpl(WanTransformerOptions options, TensorShard shard = {},
                                     const ParamSpec& spec = {});

  // The groups this rank runs in (layers/parallel_state.hpp), bound before
  // prepare_context()/forward(): the tensor group must run this shard (ModelError), the
  // tensor and sequence groups must split the heads (ConfigError); null axes: one rank.
  // With a sequence group every forward is Ulysses over it (docs/runtime.md, "Sequence
  // parallel"): every rank passes the same inputs and gets the whole output.
  void bind_parallel(const ParallelState& state);
  [[nodiscard]] const TensorShard& tensor_shard() const noexcept { return shard_; }
  // The checkpoint tensors this shard holds a slice of (LoadOptions::shard, init_random_weights):
  // the slices its parallel layers declare (layer_shard_plan): in every block attn1/attn2 to_q,
  // to_k, to_v (weight, bias), norm_q, norm_k and ffn.net.0.proj along dim 0, to_out.0.weight
  // and ffn.net.2.weight along dim 1. Empty for an unsharded model.
  [[nodiscard]] ShardPlan shard_plan();

  // hidden [B, in_channels, F, H, W] (F, H, W multiples of the patch size), timestep [B]
  // (one per sample) or [B, N] (one per token, N = F*H*W / patch volume: Wan2.2 TI2V),
  // context [B, L, text_dim], image [B or 1, Li, image_dim] (the CLIP tokens: needed exactly
  // when options().image_tokens()). Returns [B, out_channels, F, H, W] in hidden's dtype.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& timestep,
                                      const torch::Tensor& context, const torch::Tensor& image = {});
  // context [B, L, text_dim] (and image as for forward) -> its WanPreparedContext; ModelError
  // for another shape, or an image missing or given where options().image_tokens() says not.
  [[nodiscard]] WanPreparedContext prepare_context(const torch::Tensor& context,
                                                   const torch::Tensor& image = {});
  // forward() with a prepared context of the same batch: the same operations in the same
  // order, so the result is bitwise the one forward(hidden, timestep, context) gives. `cache`:
  // the request branch's step cache the block stack runs through (pipelines/step_cache.hpp),
  // or null.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& timestep,
                                      const WanPreparedContext& context, StepCache* cache = nullptr);

  // The reference's _keep_in_fp32_modules: built in float32, kept so by to_dtype (norm1 and
  // norm3 have no parameters here).
  inline static const Float32Modules kKeepInFloat32{"time_embedder", "scale_shift_table", "norm1",
                                                    "norm2", "norm3"};
  // Moves to device and dtype (to_dtype_keeping_float32 with kKeepInFloat32).
  void to_dtype(torch::Device device, torch::ScalarType dtype);
  // The dtype of the projections (the "transformer dtype" of the pipelines).
  [[nodiscard]] torch::ScalarType dtype() const;
  // model.quantization fp8, the model's plan (layers/quantization.hpp): the blocks' attention
  // and FFN GEMMs in FP8 (W8A8, layers/fp8.hpp); the embeddings, the text keys/values and
  // proj_out stay bf16. Needs the fused elementwise kernels on the GPU: ModelError where
  // fp8_unavailable_reason(device, Fp8Needs::deferred_biases), the model unchanged.
  void quantize_fp8();
  [[nodiscard]] static Fp8Plan fp8_plan();

  [[nodiscard]] const WanTransformerOptions& options() const noexcept { return options_; }

  torch::nn::Conv3d patch_embedding{nullptr};
  WanConditionEmbedder condition_embedder{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  Linear proj_out{nullptr};
  torch::Tensor scale_shift_table;  // [1, 2, dim]

 private:
  WanTransformerOptions options_;
  TensorShard shard_;
  ParallelState parallel_;
  Rope3d rope_;
};
TORCH_MODULE(WanTransformer3DModel);

// Builds the transformer from a Diffusers `transformer/` folder (config.json + safetensors,
// sharded or not), built in its final dtypes on `device`, and loads the weights strictly in
// place (only this shard's slices: shard_plan()); peak host memory is a few tensors.
// Throws WeightsError / ModelError / ConfigError (shard).
[[nodiscard]] WanTransformer3DModel load_wan_transformer(const std::filesystem::path& dir,
                                                         torch::ScalarType dtype,
                                                         torch::Device device,
                                                         TensorShard shard = {});

}  // namespace omnidp::models::wan

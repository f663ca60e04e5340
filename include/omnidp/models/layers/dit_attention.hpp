#pragma once
// The self- and cross-attention of a video DiT in Diffusers' `Attention` layout with q/k
// RMSNorm across all heads (qk_norm "rms_norm_across_heads", Wan): to_q, to_k, to_v,
// to_out.0 (the reference's to_out.1 is Dropout), norm_q, norm_k; a cross-attention may add
// K/V projections of image tokens (add_k_proj, add_v_proj, norm_added_k: Wan2.1 I2V). The
// projections the attention reads from one input are one QKVParallelLinear (one GEMM; the
// checkpoint's names on its parts): q, k and v (self), k and v (cross, whose q reads x).
// Built for a tensor shard the attention holds heads/n heads: the projections column-split
// (ColumnParallelLinear), the norms (HeadNorm) column-split with their sums of squares
// completed over the tensor group, to_out.0 row-split (RowParallelLinear, the whole bias).
//
// Both attentions return {value, bias}. Where defers_biases() (whenever fused_elementwise(),
// layers/fused.hpp) the projections run as plain GEMMs and each bias goes into the next kernel
// that reads the tensor anyway: q and k biases into their RMSNorm, the output bias returned
// unapplied for the caller's residual to add. The value bias is folded into the output bias
// (attention rows sum to one: attn(V + b) = attn(V) + b), so self-attention's output bias is
// to_out.bias + to_out.weight @ to_v.bias, computed per request (low-rank updates may change
// the weight) by folded_out_bias(). Otherwise (the eager baseline) every bias is added in its
// projection and the returned bias is undefined. The two equal up to rounding.
// Threading: as any torch::nn::Module (one thread at a time); inference only.

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "omnidp/collective/collective.hpp"
#include "omnidp/models/layers/head_norm.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/layers/param_spec.hpp"
#include "omnidp/models/layers/tensor_parallel.hpp"
#include "omnidp/models/layers/ulysses.hpp"

namespace omnidp::models {

// Keys [B, Lc, H, Dh] (normalised) and values [B, Lc, H, Dh] of a cross-attention context.
using KeyValues = std::pair<torch::Tensor, torch::Tensor>;

class SelfAttentionImpl : public torch::nn::Module,
                          public TensorParallelLayer,
                          public FusedLinearOwner {
 public:
  // ConfigError (naming `owner`) where shard.size does not divide heads or dim.
  SelfAttentionImpl(std::int64_t dim, std::int64_t heads, double eps, TensorShard shard,
                    const ParamSpec& spec, const std::string& owner);
  // Its layers declare their own slices; the attention keeps the group for the folded bias.
  [[nodiscard]] std::vector<std::pair<std::string, TensorSlice>> parameter_slices() const override {
    return {};
  }
  void bind_tensor_group(Collective* group) override { tensor_group_ = group; }
  [[nodiscard]] bool defers_biases() const;  // whenever fused_elementwise() is

  // Self-attention of x [B, L, dim] with rope_freqs (Rope3d::freqs; undefined to skip); the
  // deferred output bias is `out_bias` (folded_out_bias(); ModelError if undefined then, not
  // read otherwise). With an active `sequence` shard, x holds this rank's tokens and rope_freqs
  // their rows; the attention runs over every token of this rank's head shard
  // (layers/ulysses.hpp).
  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x,
                                                                const torch::Tensor& rope_freqs,
                                                                const torch::Tensor& out_bias = {},
                                                                const SequenceShard& sequence = {});
  // to_out.bias + to_out.weight @ to_v.bias (float32 math, the weights' dtype; low-rank updates
  // included, summed over the tensor group).
  [[nodiscard]] torch::Tensor folded_out_bias();
  // Converts the fused projection (the model's to_dtype: before its other parameters).
  void to_dtype(torch::Device device, torch::ScalarType dtype);
  [[nodiscard]] std::vector<QKVParallelLinear*> fused_linears() override { return {&in_}; }

  ColumnParallelLinear to_q{nullptr}, to_k{nullptr}, to_v{nullptr};  // in_'s parts
  torch::nn::ModuleList to_out{nullptr};                             // [0] = RowParallelLinear
  HeadNorm norm_q{nullptr}, norm_k{nullptr};

 private:
  std::int64_t heads_;              // this shard's
  RowParallelLinear out_{nullptr};  // to_out[0]
  Collective* tensor_group_ = nullptr;
  QKVParallelLinear in_;  // q, k, v
};
TORCH_MODULE(SelfAttention);

class CrossAttentionImpl : public torch::nn::Module, public FusedLinearOwner {
 public:
  // added_kv: the added K/V projections' input width (0: none). ConfigError as SelfAttention.
  CrossAttentionImpl(std::int64_t dim, std::int64_t heads, double eps, TensorShard shard,
                     const ParamSpec& spec, const std::string& owner, std::int64_t added_kv = 0);
  [[nodiscard]] bool defers_biases() const;  // whenever fused_elementwise() is

  // In two steps: the keys (after norm_k) and values of a context [B, Lc, dim], each
  // [B, Lc, heads, head_dim], prepared once per request, then the attention of x to them (and,
  // where image_kv is defined, to the image's with the same normalised queries, the two summed
  // before to_out; ModelError for image keys without added projections). The deferred bias is
  // to_out.bias.
  [[nodiscard]] KeyValues context_kv(const torch::Tensor& context);
  // The added keys (after norm_added_k) and values of embedded image tokens [B, Li, dim];
  // ModelError without added K/V projections.
  [[nodiscard]] KeyValues image_kv(const torch::Tensor& image);
  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> attend(const torch::Tensor& x,
                                                               const KeyValues& kv,
                                                               const KeyValues& image_kv = {});
  // Converts the fused projection (the model's to_dtype: before its other parameters).
  void to_dtype(torch::Device device, torch::ScalarType dtype);
  [[nodiscard]] std::vector<QKVParallelLinear*> fused_linears() override { return {&in_}; }

  ColumnParallelLinear to_q{nullptr}, to_k{nullptr}, to_v{nullptr};  // to_k, to_v: in_'s parts
  torch::nn::ModuleList to_out{nullptr};                             // [0] = RowParallelLinear
  HeadNorm norm_q{nullptr}, norm_k{nullptr};
  // The added K/V (column-split like to_k/to_v), or null.
  ColumnParallelLinear add_k_proj{nullptr}, add_v_proj{nullptr};
  HeadNorm norm_added_k{nullptr};

 private:
  std::int64_t heads_;              // this shard's
  RowParallelLinear out_{nullptr};  // to_out[0]
  QKVParallelLinear in_;            // k, v
};
TORCH_MODULE(CrossAttention);

}  // namespace omnidp::models

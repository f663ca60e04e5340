#pragma once
// The RMSNorm of attention queries or keys across all heads (Diffusers' qk_norm
// "rms_norm_across_heads", Wan), with the rotary embedding and an optional pending bias fused
// into the same pass (layers/fused.hpp rms_norm_rope). Built for tensor shard r of n it holds
// its heads' columns of the weight ([dim/n], the checkpoint's slice along dim 0) and sums the
// squares over the bound tensor group, so every shard divides by the whole row's mean
// (layers/tensor_parallel.hpp sharded_rms_norm_rope). The weight starts at ones.
// Threading: as any torch::nn::Module (one thread at a time); forward() is const.

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/layers/param_spec.hpp"
#include "omnidp/models/layers/tensor_parallel.hpp"

namespace omnidp::models {

class HeadNormImpl : public torch::nn::Module, public TensorParallelLayer {
 public:
  // dim: the whole width (heads x head_dim). ConfigError (naming `owner`) where shard.size does
  // not divide it.
  HeadNormImpl(std::int64_t dim, double eps, TensorShard shard, const ParamSpec& spec,
               const std::string& owner);
  // x [B, L, dim/n] (this shard's columns) -> normalised across the whole row, times the weight,
  // then each head of `head_dim` rotated by freqs [L, 1, head_dim/2] (undefined: no rotation);
  // `bias` [dim/n] (may be undefined) is added to x first.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& freqs,
                                      std::int64_t head_dim, const torch::Tensor& bias = {}) const;
  [[nodiscard]] double eps() const noexcept { return eps_; }
  [[nodiscard]] std::vector<std::pair<std::string, TensorSlice>> parameter_slices() const override;
  // A sharded norm takes the group of its shard (ModelError otherwise); a whole one ignores it.
  void bind_tensor_group(Collective* group) override;

  torch::Tensor weight;  // [dim/n]

 private:
  std::int64_t dim_;
  double eps_;
  TensorShard shard_;
  std::string owner_;
  Collective* group_ = nullptr;
};
TORCH_MODULE(HeadNorm);

}  // namespace omnidp::models

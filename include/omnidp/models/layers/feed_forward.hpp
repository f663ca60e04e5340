#pragma once
// Diffusers' FeedForward (models/attention.py) on tensor-parallel layers: net.0 is the
// activation module with its projection `proj` (ColumnParallelLinear, dim -> inner), net.1 a
// Dropout (no parameters), net.2 a RowParallelLinear (inner -> dim), so the checkpoint names
// are `net.0.proj.weight`, `net.2.weight`, ... Built for shard r of n it holds inner/n columns;
// its tensor group (bind_tensor_groups) completes net.2. Used by Wan's blocks and by
// HunyuanVideo-1.5's blocks and token refiner.
// Threading: as any torch::nn::Module; forward() is inference only.

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "omnidp/models/layers/fp8.hpp"
#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/layers/param_spec.hpp"

namespace omnidp::models {

// FeedForward's activation_fn: "gelu-approximate" (GELU, tanh form), "gelu" (exact GELU: Wan's
// image embedder) or "linear-silu" (SiLU).
enum class FeedForwardActivation { gelu_tanh, gelu, silu };

// FeedForward's inner width from a width multiplier: int(dim * mult), as Diffusers computes it.
[[nodiscard]] std::int64_t ffn_width(std::int64_t dim, double mult);

// activation_fn text -> FeedForwardActivation; ModelError for any other.
[[nodiscard]] FeedForwardActivation feed_forward_activation(const std::string& name);

class FeedForwardImpl : public torch::nn::Module {
 public:
  // ConfigError (naming `owner`) where shard.size does not divide inner_dim. out_dim: net.2's
  // output width (Diffusers' dim_out; <= 0: dim).
  FeedForwardImpl(std::int64_t dim, std::int64_t inner_dim, FeedForwardActivation activation,
                  TensorShard shard, const ParamSpec& spec, const std::string& owner,
                  std::int64_t out_dim = 0);
  // x [..., dim] -> [..., out_dim]: net.2(act(net.0.proj(x))), reduced over the tensor group. The
  // unquantized GELU(tanh) runs in the projection's epilogue (layers/fused.hpp linear_gelu_tanh).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  // forward(x) as {value without net.2's bias, that bias} for the caller's residual to add.
  [[nodiscard]] std::pair<torch::Tensor, torch::Tensor> forward_skip_bias(const torch::Tensor& x) const;
  // Both projections to FP8 (ParallelLinearBase::set_fp8; nullopt: the weights' dtype).
  void set_fp8(std::optional<Fp8Accumulation> accumulation);

  ColumnParallelLinear proj{nullptr};  // net.0.proj
  RowParallelLinear out{nullptr};      // net.2

 private:
  [[nodiscard]] torch::Tensor up(const torch::Tensor& x) const;
  FeedForwardActivation activation_;
};
TORCH_MODULE(FeedForward);

}  // namespace omnidp::models

#pragma once
// Megatron-style tensor parallelism (docs/models.md, "Tensor parallelism"): a transformer
// built for shard r of n holds 1/n of the attention heads (column-split q/k/v) and of the FFN
// columns (column-split up projection); its output and down projections are row-split, so
// their products are partial sums that one all-reduce over the tensor group completes, and
// their biases are added once, after the reduce. With a null group (tensor_parallel_size 1)
// every helper here is the single-rank operation.

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "omnidp/collective/collective.hpp"

namespace omnidp::models {

// This rank's tensor shard: `rank` of `size` (1: the whole model).
struct TensorShard {
  std::int64_t rank = 0;
  std::int64_t size = 1;
  [[nodiscard]] bool sharded() const noexcept { return size > 1; }
};

// `total` / shard.size, checked: a size below 1, a rank outside [0, size) or a `total` (a
// head count, an FFN width) that the size does not divide is a ConfigError on
// parallel.tensor_parallel_size naming `model` and `what`, e.g. "tiny-wan has 2 attention
// heads, which tensor_parallel_size 4 does not divide".
[[nodiscard]] std::int64_t shard_part(std::int64_t total, const TensorShard& shard,
                                      const std::string& model, const std::string& what);

// That `group` runs `shard` (its size and rank are the shard's; null exactly when the shard is
// the whole model): ModelError naming `owner` otherwise, e.g. "the transformer holds tensor
// shard 0 of 2, but runs in no tensor group".
void check_tensor_group(const TensorShard& shard, const Collective* group, const std::string& owner);

// The sum over the tensor group of a row-split projection's partial product, in place of x;
// x itself with a null group.
[[nodiscard]] torch::Tensor reduce_partial(Collective* group, const torch::Tensor& x);

// rms_norm_rope (layers/fused.hpp) of x [B, L, D/n], this rank's columns of an RMSNorm over
// `full_dim` = D columns split over the group (Wan's norm across all heads): the float32 sums
// of squares of every rank are all-reduced, so each rank normalises by the whole row's
// mean. weight and bias are this rank's columns. With a null group rms_norm_rope itself.
[[nodiscard]] torch::Tensor sharded_rms_norm_rope(Collective* group, const torch::Tensor& x,
                                                  const torch::Tensor& weight, double eps,
                                                  const torch::Tensor& freqs, std::int64_t head_dim,
                                                  std::int64_t full_dim,
                                                  const torch::Tensor& bias = {});

}  // namespace omnidp::models

#include "omnidp/models/layers/tensor_parallel.hpp"

#include <fmt/format.h>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/collective_ops.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/layers/rope.hpp"

namespace omnidp::models {

std::int64_t shard_part(std::int64_t total, const TensorShard& shard, const std::string& model,
                        const std::string& what) {
  const std::string key = "parallel.tensor_parallel_size";
  if (shard.size < 1 || shard.rank < 0 || shard.rank >= shard.size) {
    throw ConfigError(key,
                      fmt::format("tensor shard {} of {} is not a shard of a tensor-parallel group",
                                  shard.rank, shard.size));
  }
  if (total % shard.size != 0) {
    throw ConfigError(
        key, fmt::format("{} has {} {}, which tensor_parallel_size {} does not divide", model,
                         total, what, shard.size));
  }
  return total / shard.size;
}

void check_tensor_group(const TensorShard& shard, const Collective* group, const std::string& owner) {
  if (group == nullptr ? !shard.sharded()
                       : group->size() == shard.size && group->rank() == shard.rank) {
    return;
  }
  throw ModelError(
      fmt::format("the transformer holds tensor shard {} of {}, but runs in {}", shard.rank,
                  shard.size,
                  (group == nullptr ? std::string("no tensor group")
                                    : fmt::format("rank {} of {} ({} ranks)", group->rank(),
                                                  group->group_name(), group->size()))),
      {owner});
}

torch::Tensor reduce_partial(Collective* group, const torch::Tensor& x) {
  return group == nullptr ? x : all_reduce_sum(*group, x);
}

torch::Tensor sharded_rms_norm_rope(Collective* group, const torch::Tensor& x,
                                    const torch::Tensor& weight, double eps,
                                    const torch::Tensor& freqs, std::int64_t head_dim,
                                    std::int64_t full_dim, const torch::Tensor& bias) {
  if (group == nullptr) return rms_norm_rope(x, weight, eps, freqs, head_dim, bias);
  const auto xf = (bias.defined() ? x + bias : x).to(torch::kFloat32);
  const auto squares = all_reduce_sum(*group, xf.pow(2).sum(-1, true));
  auto normed =
      (xf * torch::rsqrt(squares / static_cast<double>(full_dim) + eps)).to(x.scalar_type());
  if (weight.defined()) normed = normed * weight;
  return apply_rope_heads(normed, freqs, head_dim);
}

}  // namespace omnidp::models

#include "omnidp/models/layers/head_norm.hpp"

namespace omnidp::models {

HeadNormImpl::HeadNormImpl(std::int64_t dim, double eps, TensorShard shard, const ParamSpec& spec,
                           const std::string& owner)
    : dim_(dim), eps_(eps), shard_(shard), owner_(owner) {
  weight = register_parameter(
      "weight", torch::ones({shard_part(dim, shard, owner, "norm columns")}, spec.options()), false);
}

torch::Tensor HeadNormImpl::forward(const torch::Tensor& x, const torch::Tensor& freqs,
                                    std::int64_t head_dim, const torch::Tensor& bias) const {
  return sharded_rms_norm_rope(group_, x, weight, eps_, freqs, head_dim, dim_, bias);
}

std::vector<std::pair<std::string, TensorSlice>> HeadNormImpl::parameter_slices() const {
  if (!shard_.sharded()) return {};
  return {{"weight", TensorSlice{0, shard_.rank, shard_.size}}};
}

void HeadNormImpl::bind_tensor_group(Collective* group) {
  if (!shard_.sharded()) return;
  check_tensor_group(shard_, group, owner_);
  group_ = group;
}

}  // namespace omnidp::models

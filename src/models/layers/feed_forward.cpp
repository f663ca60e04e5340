#include "omnidp/models/layers/feed_forward.hpp"

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models {

std::int64_t ffn_width(std::int64_t dim, double mult) {
  return static_cast<std::int64_t>(static_cast<double>(dim) * mult);
}

FeedForwardActivation feed_forward_activation(const std::string& name) {
  if (name == "gelu-approximate") return FeedForwardActivation::gelu_tanh;
  if (name == "gelu") return FeedForwardActivation::gelu;
  if (name == "linear-silu") return FeedForwardActivation::silu;
  throw ModelError("unknown feed-forward activation '" + name + "'");
}

FeedForwardImpl::FeedForwardImpl(std::int64_t dim, std::int64_t inner_dim,
                                 FeedForwardActivation activation, TensorShard shard,
                                 const ParamSpec& spec, const std::string& owner,
                                 std::int64_t out_dim)
    : activation_(activation) {
  (void)shard_part(inner_dim, shard, owner, "FFN columns");
  auto net = register_module("net", std::make_shared<torch::nn::Module>("net"));
  auto act = net->register_module("0", std::make_shared<torch::nn::Module>("0"));
  proj = act->register_module("proj", ColumnParallelLinear(dim, inner_dim, true, shard, spec, owner));
  out = net->register_module(
      "2", RowParallelLinear(inner_dim, out_dim > 0 ? out_dim : dim, true, shard, spec, owner));
}

torch::Tensor FeedForwardImpl::up(const torch::Tensor& x) const {
  if (activation_ == FeedForwardActivation::silu) return torch::silu(proj->forward(x));
  if (activation_ == FeedForwardActivation::gelu) return torch::gelu(proj->forward(x));
  // The FP8 GEMM has no GELU epilogue: its bias is in the epilogue, GELU a pass of its own; so
  // with low-rank updates, which come after the product.
  if (proj->method().quantized() || !proj->method().low_rank().empty())
    return torch::gelu(proj->forward(x), "tanh");
  return linear_gelu_tanh(x, proj->weight, proj->bias);
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) const { return out->forward(up(x)); }

std::pair<torch::Tensor, torch::Tensor> FeedForwardImpl::forward_skip_bias(const torch::Tensor& x) const {
  return out->forward_skip_bias(up(x));
}

void FeedForwardImpl::set_fp8(std::optional<Fp8Accumulation> accumulation) {
  proj->set_fp8(accumulation);
  out->set_fp8(accumulation);
}

}  // namespace omnidp::models

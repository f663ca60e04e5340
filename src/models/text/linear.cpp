#include "omnidp/models/text/linear.hpp"

namespace omnidp::models::text {

LinearImpl::LinearImpl(std::int64_t in_features, std::int64_t out_features, bool bias_, const ParamSpec& spec) {
  weight = register_parameter("weight", torch::empty({out_features, in_features}, spec.options()), false);
  if (bias_) bias = register_parameter("bias", torch::empty({out_features}, spec.options()), false);
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) const {
  return bias.defined() ? torch::linear(x, weight, bias) : torch::linear(x, weight);
}

EmbeddingImpl::EmbeddingImpl(std::int64_t num_embeddings, std::int64_t dim, const ParamSpec& spec) {
  weight = register_parameter("weight", torch::empty({num_embeddings, dim}, spec.options()), false);
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids) const {
  return torch::embedding(weight, ids.to(torch::kLong));
}

void freeze(torch::nn::Module& module) {
  for (auto& p : module.parameters(true)) p.set_requires_grad(false);
}

}  // namespace omnidp::models::text

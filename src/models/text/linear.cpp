#include "omnidp/models/text/linear.hpp"

namespace omnidp::models::text {

EmbeddingImpl::EmbeddingImpl(std::int64_t num_embeddings, std::int64_t dim, const ParamSpec& spec) {
  weight = register_parameter("weight", torch::empty({num_embeddings, dim}, spec.options()), false);
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids) const {
  return torch::embedding(weight, ids.to(torch::kLong));
}

}  // namespace omnidp::models::text

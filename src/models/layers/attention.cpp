#include "omnidp/models/layers/attention.hpp"

#include <torch/version.h>

#include <cmath>

namespace omnidp::models {

bool fused_attention_available() noexcept { return TORCH_VERSION_MAJOR >= 2; }

torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v,
                                           const std::optional<torch::Tensor>& mask,
                                           std::optional<double> scale) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, scale);
#else
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * s;
  if (mask.has_value()) {
    if (mask->scalar_type() == torch::kBool) {
      scores = scores.masked_fill(mask->logical_not(), -std::numeric_limits<float>::infinity());
    } else {
      scores = scores + *mask;
    }
  }
  return torch::matmul(torch::softmax(scores, -1), v);
#endif
}

}  // namespace omnidp::models

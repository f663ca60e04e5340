#include "omnidp/models/layers/attention.hpp"

#include <torch/version.h>

#include <cmath>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp::models {

bool fused_attention_available() noexcept { return TORCH_VERSION_MAJOR >= 2; }

AttentionBackend parse_attention_backend(const std::string& name) {
  if (name == "auto") return AttentionBackend::automatic;
  if (name == "flash") return AttentionBackend::flash;
  if (name == "cudnn") return AttentionBackend::cudnn;
  if (name == "efficient") return AttentionBackend::efficient;
  if (name == "math") return AttentionBackend::math;
  throw UsageError("attention backend must be auto, flash, cudnn, efficient or math, got '" + name +
                   "'");
}

void set_attention_backend(AttentionBackend backend) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  auto& ctx = at::globalContext();
  // libtorch's own order (flash, efficient, math, cuDNN, ...), as found before the first change.
  static const auto defaults = ctx.sDPPriorityOrder();
  std::vector<std::int64_t> order;
  if (backend != AttentionBackend::automatic) {
    const auto chosen = backend == AttentionBackend::flash       ? at::SDPBackend::flash_attention
                        : backend == AttentionBackend::cudnn     ? at::SDPBackend::cudnn_attention
                        : backend == AttentionBackend::efficient ? at::SDPBackend::efficient_attention
                                                                 : at::SDPBackend::math;
    order.push_back(static_cast<std::int64_t>(chosen));
  }
  // The chosen family first; the others stay as fallbacks for shapes it cannot take.
  for (const auto b : defaults) {
    if (order.empty() || static_cast<std::int64_t>(b) != order.front()) {
      order.push_back(static_cast<std::int64_t>(b));
    }
  }
  ctx.setSDPPriorityOrder(order);
#else
  (void)backend;
#endif
}

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

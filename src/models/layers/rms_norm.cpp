#include "omnidp/models/layers/rms_norm.hpp"

#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models {

RMSNormImpl::RMSNormImpl(std::int64_t dim, double eps, RmsNormStyle style,
                         const torch::TensorOptions& options)
    : eps_(eps), style_(style) {
  weight = register_parameter("weight", torch::ones({dim}, options), false);
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) const {
  switch (style_) {
    case RmsNormStyle::torch_nn: return rms_norm(x, weight, eps_);
    case RmsNormStyle::qwen2: {
      const auto h = x.to(torch::kFloat32);
      return weight * (h * torch::rsqrt(h.pow(2).mean(-1, true) + eps_)).to(x.scalar_type());
    }
    case RmsNormStyle::t5:
    case RmsNormStyle::diffusers: break;
  }
  if (style_ == RmsNormStyle::diffusers && weight.scalar_type() == x.scalar_type())
    return rms_norm(x, weight, eps_);
  const auto variance = x.to(torch::kFloat32).pow(2).mean(-1, true);
  auto h = x * torch::rsqrt(variance + eps_);
  if (weight.scalar_type() == torch::kFloat16 || weight.scalar_type() == torch::kBFloat16) {
    h = h.to(weight.scalar_type());
  }
  return style_ == RmsNormStyle::t5 ? weight * h : (h * weight).to(x.scalar_type());
}

}  // namespace omnidp::models

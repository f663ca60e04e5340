#include "omnidp/models/layers/conv.hpp"

namespace omnidp::models {
namespace {

[[nodiscard]] bool upcast(const torch::Tensor& x) {
  return x.device().is_cpu() &&
         (x.scalar_type() == torch::kBFloat16 || x.scalar_type() == torch::kFloat16);
}

[[nodiscard]] torch::Tensor to_float(const torch::Tensor& t) {
  return t.defined() ? t.to(torch::kFloat32) : t;
}

}  // namespace

torch::Tensor conv3d_fp32_accum(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias, torch::IntArrayRef stride,
                                torch::IntArrayRef padding) {
  if (!upcast(x)) return torch::conv3d(x, weight, bias, stride, padding);
  return torch::conv3d(to_float(x), to_float(weight), to_float(bias), stride, padding)
      .to(x.scalar_type());
}

torch::Tensor conv2d_fp32_accum(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias, torch::IntArrayRef stride,
                                torch::IntArrayRef padding) {
  if (!upcast(x)) return torch::conv2d(x, weight, bias, stride, padding);
  return torch::conv2d(to_float(x), to_float(weight), to_float(bias), stride, padding)
      .to(x.scalar_type());
}

}  // namespace omnidp::models

#include "omnidp/models/layers/fused.hpp"

#include <torch/version.h>

#include <optional>
#include <stdexcept>

#include "omnidp/models/layers/cuda_kernels.hpp"
#include "omnidp/models/layers/rope.hpp"

// libtorch >= 2.4 has at::rms_norm; its ternary TensorIterator ops cast the common dtype to
// the output inside the kernel (libtorch 1.13 does not accept a narrower output there).
#define OMNIDP_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||         \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace omnidp::models {
namespace {

// The fused CUDA kernels apply: switch on, kernels built, bf16 on a CUDA device.
const CudaKernels* kernels_for(const torch::Tensor& x) {
  if (!fused_elementwise() || !x.is_cuda() || x.scalar_type() != torch::kBFloat16) {
    return nullptr;
  }
  return cuda_kernels();
}

// Element offset between consecutive groups of a [B, G, 1, D] float32 row table, when one
// stride walks them in (b, g) order with unit-stride rows; nullopt otherwise.
// t is a contiguous row of n elements of `dtype` on x's device: what a kernel reads as a
// per-column weight or bias.
bool is_row(const torch::Tensor& t, torch::ScalarType dtype, std::int64_t n, const torch::Tensor& x) {
  return t.defined() && t.scalar_type() == dtype && t.is_contiguous() && t.numel() == n &&
         t.device() == x.device();
}

std::optional<std::int64_t> group_stride(const torch::Tensor& t) {
  if (t.dim() != 4 || t.scalar_type() != torch::kFloat32 || t.stride(3) != 1 || t.size(2) != 1) {
    return std::nullopt;
  }
  if (t.size(1) == 1) return t.stride(0);
  if (t.size(0) == 1 || t.stride(0) == t.size(1) * t.stride(1)) return t.stride(1);
  return std::nullopt;
}
}  // namespace

torch::Tensor addcmul_as(const torch::Tensor& self, const torch::Tensor& t1,
                         const torch::Tensor& t2, torch::ScalarType dtype) {
#if OMNIDP_TORCH_AT_LEAST(2, 4)
  if (fused_elementwise()) {
    auto out = torch::empty(t1.sizes(), t1.options().dtype(dtype));
    at::addcmul_out(out, self, t1, t2);
    return out;
  }
#endif
  const auto wide =
      at::promote_types(at::promote_types(self.scalar_type(), t1.scalar_type()), t2.scalar_type());
  return (self.to(wide) + t1.to(wide) * t2).to(dtype);
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
#if OMNIDP_TORCH_AT_LEAST(2, 4)
  // at::rms_norm returns x's dtype; a weight of another dtype keeps the promoted product below,
  // as on every libtorch.
  if (fused_elementwise() && (!weight.defined() || weight.scalar_type() == x.scalar_type())) {
    const std::optional<torch::Tensor> w =
        weight.defined() ? std::optional<torch::Tensor>(weight) : std::nullopt;
    return at::rms_norm(x, {x.size(-1)}, w, eps);
  }
#endif
  const auto xf = x.to(torch::kFloat32);
  const auto normed = (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps)).to(x.scalar_type());
  return weight.defined() ? normed * weight : normed;
}

torch::Tensor fp32_layer_norm(const torch::Tensor& x, double eps) {
  if (x.is_cuda() && fused_elementwise()) {
    // CUDA's layer_norm accumulates low-precision inputs in float32 and rounds the output
    // once: the same as upcasting first, without the float32 copy.
    return torch::layer_norm(x, {x.size(-1)}, {}, {}, eps);
  }
  return torch::layer_norm(x.to(torch::kFloat32), {x.size(-1)}, {}, {}, eps).to(x.scalar_type());
}

torch::Tensor fp32_affine_layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                                     const torch::Tensor& bias, double eps) {
  const auto* k = kernels_for(x);
  const std::int64_t dim = x.size(-1);
  if (k != nullptr && x.is_contiguous() && dim % 2 == 0 &&
      is_row(weight, torch::kFloat32, dim, x) && is_row(bias, torch::kFloat32, dim, x)) {
    auto out = torch::empty_like(x);
    k->affine_layer_norm(x.data_ptr(), out.data_ptr(), weight.data_ptr<float>(),
                         bias.data_ptr<float>(), x.numel() / dim, dim, static_cast<float>(eps));
    return out;
  }
  const auto f32 = [](const torch::Tensor& t) { return t.defined() ? t.to(torch::kFloat32) : t; };
  return torch::layer_norm(x.to(torch::kFloat32), {dim}, f32(weight), f32(bias), eps)
      .to(x.scalar_type());
}

torch::Tensor linear_bias(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias) {
  if (fused_elementwise() && x.is_cuda() && bias.defined() && x.dim() > 2) {
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    return torch::addmm(bias, x.reshape({-1, x.size(-1)}), weight.t()).view(sizes);
  }
  return torch::nn::functional::linear(x, weight, bias);
}

torch::Tensor linear_gelu_tanh(const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias) {
#if TORCH_VERSION_MAJOR >= 2
  if (fused_elementwise() && x.is_cuda() && bias.defined() && x.dim() >= 2) {
    const auto flat = x.reshape({-1, x.size(-1)});
    auto out = at::_addmm_activation(bias, flat, weight.t(), 1, 1, /*use_gelu=*/true);
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    return out.view(sizes);
  }
#endif
  return torch::gelu(torch::nn::functional::linear(x, weight, bias), "tanh");
}

torch::Tensor modulated_layer_norm(const torch::Tensor& x, const torch::Tensor& shift,
                                   const torch::Tensor& scale1p, double eps, torch::ScalarType dtype) {
  const auto* k = kernels_for(x);
  const auto sh = group_stride(shift);
  const auto sc = group_stride(scale1p);
  if (k != nullptr && dtype == torch::kBFloat16 && x.dim() == 4 && x.is_contiguous() &&
      x.size(-1) % 2 == 0 && sh && sc && shift.sizes() == scale1p.sizes() &&
      shift.size(0) == x.size(0) && shift.size(1) == x.size(1) && shift.size(3) == x.size(3)) {
    auto out = torch::empty_like(x);
    k->modulated_layer_norm(x.data_ptr(), out.data_ptr(), shift.data_ptr<float>(),
                            scale1p.data_ptr<float>(), x.numel() / x.size(-1), x.size(-1),
                            x.size(2), *sh, *sc, static_cast<float>(eps));
    return out;
  }
  return addcmul_as(shift, fp32_layer_norm(x, eps), scale1p, dtype);
}

torch::Tensor gated_residual(const torch::Tensor& x, const torch::Tensor& y,
                             const torch::Tensor& gate, torch::ScalarType dtype,
                             const torch::Tensor& bias) {
  const auto* k = kernels_for(x);
  const auto gs = gate.defined() ? group_stride(gate) : std::optional<std::int64_t>(0);
  const bool gate_ok = !gate.defined() || (gs && gate.size(0) == x.size(0) &&
                                           gate.size(1) == x.size(1) && gate.size(3) == x.size(3));
  const bool bias_ok = !bias.defined() || is_row(bias, torch::kBFloat16, x.size(-1), x);
  if (k != nullptr && dtype == torch::kBFloat16 && y.scalar_type() == torch::kBFloat16 &&
      x.dim() == 4 && x.sizes() == y.sizes() && x.is_contiguous() && y.is_contiguous() &&
      x.size(-1) % 2 == 0 && gate_ok && bias_ok) {
    auto out = torch::empty_like(x);
    k->gated_residual(x.data_ptr(), y.data_ptr(), out.data_ptr(),
                      gate.defined() ? gate.data_ptr<float>() : nullptr,
                      bias.defined() ? bias.data_ptr() : nullptr, x.numel() / x.size(-1),
                      x.size(-1), x.size(2), *gs);
    return out;
  }
  const auto y_biased = bias.defined() ? y + bias : y;
  if (!gate.defined()) return x.to(dtype) + y_biased.to(dtype);
  return addcmul_as(x, y_biased, gate, dtype);
}

torch::Tensor rms_norm_rope(const torch::Tensor& x, const torch::Tensor& weight, double eps,
                            const torch::Tensor& freqs, std::int64_t head_dim,
                            const torch::Tensor& bias) {
  const auto* k = kernels_for(x);
  const std::int64_t dim = x.size(-1);
  const bool freqs_ok =
      !freqs.defined() ||
      (freqs.scalar_type() == torch::kComplexFloat && freqs.is_contiguous() && freqs.dim() == 3 &&
       freqs.size(0) == x.size(1) && freqs.size(2) * 2 == head_dim);
  const bool bias_ok = !bias.defined() || is_row(bias, torch::kBFloat16, dim, x);
  if (k != nullptr && x.dim() == 3 && x.stride(2) == 1 &&
      (x.size(0) == 1 || x.stride(0) == x.size(1) * x.stride(1)) && x.stride(1) % 2 == 0 &&
      dim % 2 == 0 && head_dim % 2 == 0 && dim % head_dim == 0 && weight.defined() &&
      weight.scalar_type() == torch::kBFloat16 && weight.is_contiguous() && weight.numel() == dim &&
      freqs_ok && bias_ok && reinterpret_cast<std::uintptr_t>(x.data_ptr()) % 4 == 0) {
    auto out = torch::empty({x.size(0), x.size(1), dim}, x.options());
    const float* f = freqs.defined() ? torch::view_as_real(freqs).data_ptr<float>() : nullptr;
    k->rms_norm_rope(x.data_ptr(), x.stride(1), out.data_ptr(), weight.data_ptr(),
                     bias.defined() ? bias.data_ptr() : nullptr, f, x.size(0) * x.size(1), dim,
                     x.size(1), head_dim, static_cast<float>(eps));
    return out;
  }
  return apply_rope_heads(rms_norm(bias.defined() ? x + bias : x, weight, eps), freqs, head_dim);
}

torch::Tensor channel_rms_norm(const torch::Tensor& x, const torch::Tensor& gamma, double scale,
                               bool silu, const torch::Tensor& bias) {
  if (x.dim() < 2) throw std::invalid_argument("channel_rms_norm: x must be [B, C, ...]");
  const std::int64_t channels = x.size(1);
  const auto* k = kernels_for(x);
  const bool channels_last = (x.dim() == 5 && x.is_contiguous(torch::MemoryFormat::ChannelsLast3d)) ||
                             (x.dim() == 4 && x.is_contiguous(torch::MemoryFormat::ChannelsLast));
  if (k != nullptr && channels_last && is_row(gamma, torch::kBFloat16, channels, x) &&
      (!bias.defined() || is_row(bias, torch::kBFloat16, channels, x))) {
    auto out = torch::empty_like(x);  // keeps the channels-last layout: rows of C channels
    if (k->channel_rms_norm(x.data_ptr(), out.data_ptr(), gamma.data_ptr(),
                            bias.defined() ? bias.data_ptr() : nullptr, x.numel() / channels,
                            channels, static_cast<float>(scale), silu)) {
      return out;
    }
  }
  namespace F = torch::nn::functional;
  std::vector<std::int64_t> bias_shape(static_cast<std::size_t>(x.dim()), 1);
  bias_shape.at(1) = channels;
  const auto xb = bias.defined() ? x + bias.view(bias_shape) : x;
  torch::Tensor out;
  if (xb.scalar_type() == torch::kFloat32 || xb.scalar_type() == torch::kFloat64) {
    out = F::normalize(xb, F::NormalizeFuncOptions().p(2.0).dim(1).eps(1e-12)) * scale * gamma;
  } else {
    // bf16/fp16: the norm accumulates in float32 and scale/norm is rounded once.
    const auto norm =
        torch::linalg_vector_norm(xb, 2, std::vector<std::int64_t>{1}, true, torch::kFloat32);
    out = xb * (scale / norm.clamp_min(1e-12)).to(xb.scalar_type()) * gamma;
  }
  if (silu) torch::silu_(out);
  return out;
}

}  // namespace omnidp::models

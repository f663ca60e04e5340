#include "omnidp/models/layers/fp8.hpp"

#include <fmt/format.h>
#include <torch/version.h>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/cuda_kernels.hpp"
#include "omnidp/models/layers/fused.hpp"

#define OMNIDP_HAVE_FP8 \
  (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))

namespace omnidp::models {
namespace {
constexpr double kE4m3Max = 448.0;
}  // namespace

std::string fp8_unavailable_reason(torch::Device device, Fp8Needs needs) {
  if (needs == Fp8Needs::deferred_biases && !fused_elementwise()) {
    return "FP8 quantization needs the fused CUDA kernels (a bf16 model on a GPU with "
           "model.fused_kernels true)";
  }
#if OMNIDP_HAVE_FP8
  if (!device.is_cuda()) return "FP8 GEMMs need a CUDA device (got " + device.str() + ")";
  if (!torch::cuda::is_available()) return "no CUDA device is available";
  return {};
#else
  (void)device;
  return "this build's libtorch " TORCH_VERSION
         " has no row-wise FP8 GEMM (at::_scaled_mm needs libtorch 2.5 or later)";
#endif
}

void require_fp8(torch::Device device, Fp8Needs needs) {
  if (auto reason = fp8_unavailable_reason(device, needs); !reason.empty())
    throw ModelError("model.quantization fp8: " + reason);
}

void require_fp8_config(torch::Device device) {
  if (const auto reason = fp8_unavailable_reason(device); !reason.empty())
    throw ConfigError("model.quantization", "fp8: " + reason);
}

Fp8Weight quantize_fp8_weight(const torch::Tensor& weight, Fp8Accumulation accumulation) {
  require_fp8(weight.device());
  if (weight.dim() != 2 || weight.size(0) % 16 != 0 || weight.size(1) % 16 != 0) {
    throw ModelError(
        fmt::format("FP8 weights need [out, in] with both multiples of 16 (got {} x {})",
                    weight.size(0), weight.dim() > 1 ? weight.size(1) : 0));
  }
#if OMNIDP_HAVE_FP8
  torch::NoGradGuard no_grad;
  const auto w = weight.to(torch::kFloat32);
  const auto scale = w.abs().amax(1, true).clamp_min(1e-12) / kE4m3Max;  // [out, 1]
  const auto q = (w / scale).clamp(-kE4m3Max, kE4m3Max).to(at::kFloat8_e4m3fn);
  return {q.t(), scale.t().contiguous(), accumulation};
#else
  (void)accumulation;
  return {};
#endif
}

std::pair<torch::Tensor, torch::Tensor> quantize_fp8_rows(const torch::Tensor& x) {
#if OMNIDP_HAVE_FP8
  const auto rows = x.size(0);
  const auto dim = x.size(1);
  if (const auto* k = cuda_kernels();
      k != nullptr && x.is_cuda() && x.scalar_type() == torch::kBFloat16 && x.is_contiguous()) {
    auto q = torch::empty({rows, dim}, x.options().dtype(at::kFloat8_e4m3fn));
    auto scale = torch::empty({rows, 1}, x.options().dtype(torch::kFloat32));
    if (k->quantize_rows_fp8(x.data_ptr(), q.data_ptr(), scale.data_ptr<float>(), rows, dim)) {
      return {q, scale};
    }
  }
  const auto f = x.to(torch::kFloat32);
  const auto scale = f.abs().amax(1, true).clamp_min(1e-12) / kE4m3Max;
  return {(f / scale).clamp(-kE4m3Max, kE4m3Max).to(at::kFloat8_e4m3fn), scale};
#else
  (void)x;
  require_fp8(torch::kCPU);
  return {};
#endif
}

torch::Tensor fp8_linear(const torch::Tensor& x, const Fp8Weight& w, const torch::Tensor& bias) {
#if OMNIDP_HAVE_FP8
  const auto in = x.size(-1);
  const auto [q, scale] = quantize_fp8_rows(x.reshape({-1, in}).contiguous());
  std::optional<torch::Tensor> b;
  if (bias.defined()) b = bias;
  auto out = at::_scaled_mm(q, w.weight, scale, w.scale, b, std::nullopt, torch::kBFloat16,
                            /*use_fast_accum=*/w.accumulation == Fp8Accumulation::fast);
  auto sizes = x.sizes().vec();
  sizes.back() = w.weight.size(1);
  return out.view(sizes);
#else
  (void)w;
  (void)bias;
  require_fp8(x.device());
  return {};
#endif
}

}  // namespace omnidp::models

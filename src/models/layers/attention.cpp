#include "omnidp/models/layers/attention.hpp"

#include <torch/version.h>

#include <atomic>
#include <cmath>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {
std::atomic<AttentionBackend> chosen_backend{AttentionBackend::automatic};

#define OMNIDP_HAVE_SDPA_ORDER \
  (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6))

// Under deterministic algorithms libtorch refuses cuDNN SDPA altogether (its backward is not
// deterministic), so strict mode would fall back to flash attention (about 400 against 560
// TFLOP/s at 27k-49k tokens on the H200). Its forward is deterministic: with cuDNN chosen,
// strict mode calls the cuDNN kernel itself for the shapes its dispatch check takes (CUDA,
// half or bf16, no mask, head dim a multiple of 8 up to 128, unit stride in the last dim).
#if OMNIDP_HAVE_SDPA_ORDER
bool direct_cudnn(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                  const std::optional<torch::Tensor>& mask) {
  if (chosen_backend.load(std::memory_order_relaxed) != AttentionBackend::cudnn) return false;
  if (!at::globalContext().deterministicAlgorithms() || mask.has_value()) return false;
  const auto dtype = q.scalar_type();
  const auto d = q.size(-1);
  const auto ok = [&](const torch::Tensor& t) {
    return t.is_cuda() && t.dim() == 4 && t.scalar_type() == dtype && t.stride(-1) == 1 &&
           t.size(-1) == d;
  };
  return (dtype == torch::kBFloat16 || dtype == torch::kHalf) && d % 8 == 0 && d <= 128 && ok(q) &&
         ok(k) && ok(v);
}
#endif
}  // namespace

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
  chosen_backend.store(backend, std::memory_order_relaxed);
#if OMNIDP_HAVE_SDPA_ORDER
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
#if OMNIDP_HAVE_SDPA_ORDER
  if (direct_cudnn(q, k, v, mask)) {
    return std::get<0>(at::_scaled_dot_product_cudnn_attention(
        q, k, v, std::nullopt, /*compute_log_sumexp=*/false, 0.0, false, false, scale));
  }
#endif
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

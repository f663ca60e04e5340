#include "omnidp/models/layers/attention.hpp"

#include <fmt/format.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/cuda_kernels.hpp"

namespace omnidp::models {
namespace {
std::atomic<AttentionBackend> chosen_backend{AttentionBackend::automatic};
std::atomic<bool> key_padding{true};

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

// Attention with the log-sum-exp of every query row ([B, H, Sq], fp32): cuDNN's kernel on CUDA
// (attention_key_padding admits only what it takes), the explicit softmax in fp32 elsewhere.
std::pair<torch::Tensor, torch::Tensor> attention_with_lse(const torch::Tensor& q,
                                                           const torch::Tensor& k,
                                                           const torch::Tensor& v, double scale) {
#if OMNIDP_HAVE_SDPA_ORDER
  if (q.is_cuda()) {
    const auto r = at::_scaled_dot_product_cudnn_attention(
        q, k, v, std::nullopt, /*compute_log_sumexp=*/true, 0.0, false, false, scale);
    return {std::get<0>(r), std::get<1>(r).reshape({q.size(0), q.size(1), q.size(2)})};
  }
#endif
  const auto f = torch::promote_types(q.scalar_type(), torch::kFloat32);  // float64 stays
  const auto scores = torch::matmul(q.to(f), k.to(f).transpose(-2, -1)) * scale;
  const auto lse = torch::logsumexp(scores, -1);
  const auto out = torch::matmul(torch::exp(scores - lse.unsqueeze(-1)), v.to(f));
  return {out.to(q.scalar_type()), lse};
}

// RowStrides of a [B, H, S, D] view of [B, S, H, D] rows.
RowStrides bshd_strides(const torch::Tensor& t) { return {t.stride(0), t.stride(2), t.stride(1)}; }
}  // namespace

void set_attention_key_padding(bool on) { key_padding.store(on, std::memory_order_relaxed); }

std::int64_t attention_key_padding(const torch::Tensor& q, std::int64_t keys, std::int64_t min_keys) {
#if OMNIDP_HAVE_SDPA_ORDER
  const std::int64_t extra = (kAttentionKeyAlign - keys % kAttentionKeyAlign) % kAttentionKeyAlign;
  const auto d = q.size(-1);
  const bool fast = key_padding.load(std::memory_order_relaxed) &&
                    chosen_backend.load(std::memory_order_relaxed) == AttentionBackend::cudnn &&
                    q.is_cuda() && q.scalar_type() == torch::kBFloat16 && d % 8 == 0 && d <= 128 &&
                    cuda_kernels() != nullptr;
  return fast && keys >= min_keys ? extra : 0;
#else
  (void)q, (void)keys, (void)min_keys;
  return 0;
#endif
}

torch::Tensor attention_padded_keys(const torch::Tensor& q, const torch::Tensor& k,
                                    const torch::Tensor& v, std::int64_t padding) {
  const auto keys = k.size(2);
  if (padding < 0 || padding >= keys) {
    throw std::invalid_argument(
        fmt::format("attention_padded_keys: {} padding keys of {}", padding, keys));
  }
  if (padding == 0) return omnidp::models::scaled_dot_product_attention(q, k, v);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto [out, lse] = attention_with_lse(q, k, v, scale);
  const auto k0 = k.select(2, keys - padding - 1);  // [B, H, D]: the key the padding repeats
  const auto* kernels = cuda_kernels();
  if (kernels != nullptr && out.is_cuda() && out.scalar_type() == torch::kBFloat16 &&
      q.scalar_type() == torch::kBFloat16 && k0.stride(-1) == 1 &&
      kernels->padded_key_correction(q.data_ptr(), bshd_strides(q), k0.data_ptr(), k0.stride(0),
                                     k0.stride(1), lse.data_ptr<float>(),
                                     bshd_strides(lse.unsqueeze(-1)), out.data_ptr(),
                                     bshd_strides(out), q.size(0), q.size(2), q.size(1), q.size(3),
                                     static_cast<float>(scale), static_cast<float>(padding))) {
    return out;
  }
  const auto f = torch::promote_types(q.scalar_type(), torch::kFloat32);
  const auto s0 = (q.to(f) * k0.unsqueeze(2).to(f)).sum(-1) * scale;  // [B, H, Sq]
  const auto factor = 1.0 / (1.0 - static_cast<double>(padding) * torch::exp(s0 - lse.to(f)));
  return (out.to(f) * factor.unsqueeze(-1)).to(out.scalar_type());
}

torch::Tensor joint_attention(const torch::Tensor& q, const std::vector<torch::Tensor>& k_parts,
                              const std::vector<torch::Tensor>& v_parts) {
  if (k_parts.empty() || k_parts.size() != v_parts.size()) {
    throw std::invalid_argument("joint_attention: as many value parts as key parts, at least one");
  }
  std::int64_t keys = 0;
  for (const auto& k : k_parts) keys += k.size(1);
  const auto padding = k_parts.size() > 1 ? attention_key_padding(q, keys, kMinPaddedKeys) : 0;
  if (padding == 0) {
    const auto k = k_parts.size() == 1 ? k_parts[0] : torch::cat(k_parts, 1);
    const auto v = v_parts.size() == 1 ? v_parts[0] : torch::cat(v_parts, 1);
    return omnidp::models::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                        v.transpose(1, 2))
        .transpose(1, 2);
  }
  auto kp = k_parts;
  auto vp = v_parts;
  const auto last = std::find_if(k_parts.rbegin(), k_parts.rend(),
                                 [](const torch::Tensor& k) { return k.size(1) > 0; });
  kp.push_back(last->narrow(1, last->size(1) - 1, 1).expand({-1, padding, -1, -1}));
  vp.push_back(torch::zeros(
      {v_parts.back().size(0), padding, v_parts.back().size(2), v_parts.back().size(3)},
      v_parts.back().options()));
  return attention_padded_keys(q.transpose(1, 2), torch::cat(kp, 1).transpose(1, 2),
                               torch::cat(vp, 1).transpose(1, 2), padding)
      .transpose(1, 2);
}

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

torch::Tensor masked_rows_attention(const torch::Tensor& q, const torch::Tensor& k,
                                    const torch::Tensor& v, const torch::Tensor& key_mask,
                                    const torch::Tensor& row_mask) {
  const auto b = key_mask.size(0);
  // Qualified: libtorch 2 has at::scaled_dot_product_attention too (found by argument lookup).
  const auto out = omnidp::models::scaled_dot_product_attention(
      q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
      key_mask.view({b, 1, 1, key_mask.size(1)}));
  return (out * row_mask.view({b, 1, row_mask.size(1), 1}).to(out.scalar_type())).transpose(1, 2);
}

}  // namespace omnidp::models

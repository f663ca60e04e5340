#pragma once
// Scaled dot-product attention for every model, one call site for the libtorch versions:
// libtorch >= 2.0 dispatches to at::scaled_dot_product_attention (flash / cuDNN / memory-
// efficient kernels on CUDA); libtorch 1.13 (Debian, CPU) uses the plain math formulation.
// Thread-safe (pure function of its inputs).

#include <torch/torch.h>

#include <optional>

namespace omnidp::models {

// q: [B, H, Lq, D], k and v: [B, H, Lk, D]. mask: optional, broadcastable to [B, H, Lq, Lk];
// bool (true = attend) or additive float. Returns [B, H, Lq, D] in q's dtype.
// scale defaults to 1/sqrt(D).
[[nodiscard]] torch::Tensor scaled_dot_product_attention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const std::optional<torch::Tensor>& mask = std::nullopt,
    std::optional<double> scale = std::nullopt);

// True when the fused at::scaled_dot_product_attention is used (libtorch >= 2.0).
[[nodiscard]] bool fused_attention_available() noexcept;

}  // namespace omnidp::models

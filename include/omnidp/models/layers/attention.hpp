#pragma once
// Scaled dot-product attention for every model, one call site for the libtorch versions:
// libtorch >= 2.0 dispatches to at::scaled_dot_product_attention (flash / cuDNN / memory-
// efficient kernels on CUDA); libtorch 1.13 (Debian, CPU) uses the plain math formulation.
// Thread-safe (pure function of its inputs).

#include <torch/torch.h>

#include <optional>
#include <string>

namespace omnidp::models {

// q: [B, H, Lq, D], k and v: [B, H, Lk, D]. mask: optional, broadcastable to [B, H, Lq, Lk];
// bool (true = attend) or additive float. Returns [B, H, Lq, D] in q's dtype.
// scale defaults to 1/sqrt(D). Under determinism.strict with the cuDNN family chosen, the
// cuDNN kernel is called directly (libtorch's dispatch refuses it under deterministic
// algorithms for its backward's sake; the forward is deterministic).
[[nodiscard]] torch::Tensor scaled_dot_product_attention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const std::optional<torch::Tensor>& mask = std::nullopt,
    std::optional<double> scale = std::nullopt);

// True when the fused at::scaled_dot_product_attention is used (libtorch >= 2.0).
[[nodiscard]] bool fused_attention_available() noexcept;

// Which CUDA kernel family at::scaled_dot_product_attention tries first. `automatic` is
// libtorch's own order (flash, memory-efficient, math, cuDNN); the others move that family to
// the front and keep the rest, in libtorch's order, as fallbacks for shapes it cannot take.
enum class AttentionBackend { automatic, flash, cudnn, efficient, math };

// Parses "auto" | "flash" | "cudnn" | "efficient" | "math"; throws UsageError otherwise.
[[nodiscard]] AttentionBackend parse_attention_backend(const std::string& name);

// Sets the process-wide choice (libtorch's global context). Call before the first forward,
// from the thread that runs the model; a no-op before libtorch 2.6 (no priority order).
void set_attention_backend(AttentionBackend backend);

}  // namespace omnidp::models

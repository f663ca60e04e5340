#pragma once
// Scaled dot-product attention for every model, one call site for the libtorch versions:
// libtorch >= 2.0 dispatches to at::scaled_dot_product_attention (flash / cuDNN / memory-
// efficient kernels on CUDA); libtorch 1.13 (Debian, CPU) uses the plain math formulation.
// Thread-safe (pure function of its inputs).

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// Joint attention: q [B, Sq, H, D] over the concatenation (dim 1) of the key and value parts
// [B, Si, H, D] (a video's tokens and its text, or one part). Returns [B, Sq, H, D] in q's
// dtype, the same values as scaled_dot_product_attention over the concatenated keys.
// With several parts, where attention_key_padding says so (from kMinPaddedKeys keys), the
// concatenation also appends the padding to a multiple of kAttentionKeyAlign keys
// (attention_padded_keys). One part is never padded: there the padding would cost a copy of k
// and v, about what the aligned kernel saves (Wan at 27280 tokens: 0.877 against 0.874 s per
// forward, docs/performance.md). Thread-safe (pure function of its inputs).
inline constexpr std::int64_t kAttentionKeyAlign = 128;
inline constexpr std::int64_t kMinPaddedKeys = 4096;
[[nodiscard]] torch::Tensor joint_attention(const torch::Tensor& q,
                                            const std::vector<torch::Tensor>& k_parts,
                                            const std::vector<torch::Tensor>& v_parts);

// Masked attention of q [B, Sq, H, D] to k, v [B, Sk, H, D] (token-major): the keys where
// key_mask [B, Sk] is false are no keys, and the output rows where row_mask [B, Sq] is false are
// zero (what a masked softmax with every key masked gives in PyTorch >= 2.5: no NaN appears).
// Returns [B, Sq, H, D] in q's dtype. The one masked attention of the layers (attention_layer,
// ulysses); the row mask differs from the key mask where the queries carry Ulysses padding.
[[nodiscard]] torch::Tensor masked_rows_attention(const torch::Tensor& q, const torch::Tensor& k,
                                                  const torch::Tensor& v,
                                                  const torch::Tensor& key_mask,
                                                  const torch::Tensor& row_mask);

// How many padding keys to append to `keys` keys for q [B, Sq, H, D]: the rows up to the next
// multiple of kAttentionKeyAlign, where cuDNN's kernel runs faster than at the unaligned length
// (docs/performance.md, "Kernel ceilings"), when q is on CUDA in bf16, the head dim is a
// multiple of 8 up to 128, the cuDNN family is chosen, libtorch >= 2.6, the fused CUDA kernels
// are built, the padding is switched on and keys >= min_keys; otherwise 0.
[[nodiscard]] std::int64_t attention_key_padding(const torch::Tensor& q, std::int64_t keys,
                                                 std::int64_t min_keys);

// Attention over keys whose last `padding` rows are padding, each a copy of key
// Sk - padding - 1 with a zero value: the result over the first Sk - padding keys. The kernel
// (cuDNN on CUDA, the explicit softmax elsewhere) also returns the log-sum-exp L of every query
// row; a padding key adds e^{s0} to the row's denominator e^L and nothing to its numerator
// (s0 = scale q.k0, the repeated key's score), so out' = out / (1 - padding e^{s0 - L}), a
// factor between 1 and padding + 1 whatever the scores. q, k, v: [B, H, S, D] as
// scaled_dot_product_attention.
[[nodiscard]] torch::Tensor attention_padded_keys(const torch::Tensor& q, const torch::Tensor& k,
                                                  const torch::Tensor& v, std::int64_t padding);

// Process-wide switch of the key padding (on by default): benchmarks measure both.
void set_attention_key_padding(bool on);

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

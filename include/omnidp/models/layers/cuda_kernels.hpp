#pragma once
// Fused CUDA kernels for the bf16 transformer hot path, compiled only where the build finds a
// CUDA compiler and a CUDA libtorch (src/models/layers/cuda_kernels.cu); elsewhere
// cuda_kernels() is null and callers take the libtorch path (layers/fused.hpp decides).
// Torch-free on purpose: raw device pointers, element counts and strides. Every launcher runs
// on libtorch's current CUDA stream of the current device and checks the launch.
// Threading: as libtorch's own kernels (one stream per thread, no shared state).

#include <cstdint>

namespace omnidp::models {

// Element strides of a [B, S, H, D] tensor's first three dims (unit stride in D).
struct RowStrides {
  std::int64_t b, s, h;
};

struct CudaKernels {
  // out[r, :] = bf16( shift[g] + bf16(LayerNorm(x[r, :])) * scale1p[g] ), LayerNorm without
  // affine parameters, statistics in fp32. x and out: bf16 [rows, dim] contiguous; shift and
  // scale1p: fp32 rows of `dim`, row g = r / rows_per_group at g * shift_group_stride and
  // g * scale_group_stride.
  void (*modulated_layer_norm)(const void* x, void* out, const float* shift, const float* scale1p,
                               std::int64_t rows, std::int64_t dim, std::int64_t rows_per_group,
                               std::int64_t shift_group_stride, std::int64_t scale_group_stride,
                               float eps);
  // out[r, :] = bf16( LayerNorm(x[r, :]) * weight + bias ) with fp32 statistics, fp32 weight
  // and bias of `dim`, one rounding; x and out bf16 [rows, dim] contiguous.
  void (*affine_layer_norm)(const void* x, void* out, const float* weight, const float* bias,
                            std::int64_t rows, std::int64_t dim, float eps);
  // out[r, :] = bf16( x[r, :] + y'[r, :] * gate[g] ) in fp32 with y' = bf16(y + bias) (a
  // projection's bias deferred from its GEMM); x, y, out bf16 [rows, dim] contiguous; gate as
  // shift above, null for a gate of 1; bias bf16 [dim] or null.
  void (*gated_residual)(const void* x, const void* y, void* out, const float* gate,
                         const void* bias, std::int64_t rows, std::int64_t dim,
                         std::int64_t rows_per_group, std::int64_t group_stride);
  // torch.nn.RMSNorm over each row (fp32 statistics), times the bf16 weight, then (freqs not
  // null) the pairwise rotation of each head: (x[2i] + i x[2i+1]) * freqs[token, i % (head_dim/2)]
  // with freqs complex64 [tokens, head_dim/2]. x: bf16 rows of `dim` at x + r * x_row_stride
  // (a q/k slice of a fused projection), first rounded as bf16(x + bias) where bias (bf16 [dim],
  // a projection's deferred bias) is not null; out: bf16 [rows, dim] contiguous.
  // token = r % tokens.
  void (*rms_norm_rope)(const void* x, std::int64_t x_row_stride, void* out, const void* weight,
                        const void* bias, const float* freqs, std::int64_t rows, std::int64_t dim,
                        std::int64_t tokens, std::int64_t head_dim, float eps);
  // The Wan VAE's RMS_norm over the channels of a channels-last tensor, one row of `dim`
  // channels per position: x' = bf16(x + bias) (bias bf16 [dim] or null: a convolution's
  // deferred bias), f = bf16(scale / max(||x'||_2, 1e-12)) with the norm in fp32,
  // out = bf16(bf16(x' * f) * gamma), then (silu) bf16(SiLU(out)). x, out bf16 [rows, dim]
  // contiguous; gamma bf16 [dim]. Returns false (nothing launched) for rows it does not take:
  // dim not a multiple of 8 or over 1024, or pointers not 16-byte aligned.
  bool (*channel_rms_norm)(const void* x, void* out, const void* gamma, const void* bias,
                           std::int64_t rows, std::int64_t dim, float scale, bool silu);
  // Per-row FP8 quantization (layers/fp8.hpp): a = max(amax(|x[r, :]|), 1e-12),
  // q[r, :] = e4m3(x[r, :] * (448 / a)) saturated to +-448, scale[r] = a / 448. x bf16 and q e4m3
  // [rows, dim] contiguous. Returns false (nothing launched) unless dim is a multiple of 8 and
  // x, q are 16- and 8-byte aligned.
  bool (*quantize_rows_fp8)(const void* x, void* q, float* scale, std::int64_t rows,
                            std::int64_t dim);
  // The padded-key correction of attention_padded_keys (layers/attention.hpp), in place: for
  // every row (b, s, h), out = bf16(out * 1 / (1 - padding * e^{scale * q.k0 - lse})) in fp32,
  // the dot product over D in fp32. q and out: bf16 [B, S, H, D] rows at the given strides;
  // k0: bf16 [B, H, D] rows at k0_b, k0_h (the repeated key); lse: fp32 at lse.b, lse.s, lse.h.
  // Returns false (nothing launched) unless D is a multiple of 8 up to 256 and the q, out and
  // k0 rows are 16-byte aligned.
  bool (*padded_key_correction)(const void* q, RowStrides q_strides, const void* k0,
                                std::int64_t k0_b, std::int64_t k0_h, const float* lse,
                                RowStrides lse_strides, void* out, RowStrides out_strides,
                                std::int64_t batch, std::int64_t tokens, std::int64_t heads,
                                std::int64_t head_dim, float scale, float padding);
};

// The kernels of this build, or null (no CUDA compiler or no CUDA libtorch at build time).
[[nodiscard]] const CudaKernels* cuda_kernels() noexcept;

// libtorch's CUDA caching allocator on the current device, for benchmarks: the peak of the
// bytes allocated to tensors since the last reset, GiB; -1 in builds without the CUDA kernels.
[[nodiscard]] double cuda_peak_allocated_gib();
void cuda_reset_peak_memory();

}  // namespace omnidp::models

#pragma once
// Elementwise building blocks that cost one kernel on libtorch 2 where the naive expression
// costs three to five (upcast, multiply, add, downcast): the modulation, gated residual and
// norm steps around every transformer block. Same math as the reference expressions; on
// libtorch 1.13 (Debian, CPU) they fall back to those expressions. Pure functions of their
// inputs and of one process-wide switch (set_fused_elementwise): thread-safe.

#include <torch/torch.h>

#include "omnidp/models/layers/fused_switch.hpp"

namespace omnidp::models {

// (self + t1 * t2) computed in the inputs' promoted dtype (float32 when any input is) and
// rounded once to `dtype`: the reference's `(x.float() + y * gate).type_as(x)` and
// `(norm.float() * (1 + scale) + shift).type_as(x)`. Inputs broadcast; t1 gives the shape.
[[nodiscard]] torch::Tensor addcmul_as(const torch::Tensor& self, const torch::Tensor& t1,
                                       const torch::Tensor& t2, torch::ScalarType dtype);

// torch.nn.RMSNorm over the last dimension: x * rsqrt(mean(x^2) + eps) computed in float32,
// in x's dtype, times `weight` (undefined: no weight). libtorch's fused rms_norm where it has
// one (>= 2.4).
[[nodiscard]] torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// LayerNorm over the last dimension without affine parameters, computed in float32 and
// returned in x's dtype (Diffusers' FP32LayerNorm(elementwise_affine=False)).
[[nodiscard]] torch::Tensor fp32_layer_norm(const torch::Tensor& x, double eps);

// Diffusers' FP32LayerNorm with affine parameters: LayerNorm over the last dimension of x,
// statistics and the affine step in float32 (weight and bias float32 [D]), rounded once to x's
// dtype. One fused CUDA kernel for bf16 x where this build has them.
[[nodiscard]] torch::Tensor fp32_affine_layer_norm(const torch::Tensor& x,
                                                   const torch::Tensor& weight,
                                                   const torch::Tensor& bias, double eps);

// x @ weight^T + bias over the last dimension of x. On CUDA (fused switch on) one GEMM with the
// bias added in its epilogue (addmm over the flattened rows), where libtorch's linear launches a
// GEMM and a separate broadcast add for inputs of more than two dimensions. Elsewhere, or
// without a bias, torch's linear.
[[nodiscard]] torch::Tensor linear_bias(const torch::Tensor& x, const torch::Tensor& weight,
                                        const torch::Tensor& bias);

// gelu(x @ weight^T + bias, approximate="tanh"): the first layer of a FeedForward. On CUDA
// (fused switch on, libtorch >= 2) one cuBLASLt GEMM with a bias+GELU epilogue: the activation
// is applied to the float32 accumulator and rounded once. Elsewhere linear, then gelu.
[[nodiscard]] torch::Tensor linear_gelu_tanh(const torch::Tensor& x, const torch::Tensor& weight,
                                             const torch::Tensor& bias);

// The AdaLN modulation: addcmul_as(shift, fp32_layer_norm(x, eps), scale1p, dtype) with x
// [B, G, n, D] and shift/scale1p [B, G, 1, D] float32 (one row per group of n tokens). One
// fused CUDA kernel for bf16 x where this build has them (layers/cuda_kernels.hpp).
[[nodiscard]] torch::Tensor modulated_layer_norm(const torch::Tensor& x, const torch::Tensor& shift,
                                                 const torch::Tensor& scale1p, double eps,
                                                 torch::ScalarType dtype);

// The gated residual addcmul_as(x, y', gate, dtype), x and y [B, G, n, D], gate [B, G, 1, D]
// float32 (undefined: a gate of 1, a plain residual add), y' = y + bias rounded to y's dtype
// (bias [D] in y's dtype, undefined: none): a projection's bias deferred from its GEMM, added
// as the GEMM's epilogue would. One fused CUDA kernel for bf16 where available.
[[nodiscard]] torch::Tensor gated_residual(const torch::Tensor& x, const torch::Tensor& y,
                                           const torch::Tensor& gate, torch::ScalarType dtype,
                                           const torch::Tensor& bias = {});

// rms_norm(x', weight, eps) over the whole last dimension of x' [B, L, D], then (freqs defined)
// apply_rope (layers/rope.hpp) per head of head_dim with freqs complex64 [L, 1, head_dim/2]; x' = x
// + bias rounded to x's dtype (bias [D] in x's dtype, undefined: x' = x; a projection's deferred
// bias). Returns [B, L, D] contiguous. x may be a column slice of a fused projection. One fused
// CUDA kernel for bf16 where available.
[[nodiscard]] torch::Tensor rms_norm_rope(const torch::Tensor& x, const torch::Tensor& weight,
                                          double eps, const torch::Tensor& freqs,
                                          std::int64_t head_dim, const torch::Tensor& bias = {});

// The Wan VAE's RMS_norm over the channels (dim 1) of x [B, C, ...]:
// x' * (scale / max(||x'||_2, 1e-12)) * gamma (gamma [C, 1, ...]), then SiLU where `silu`;
// x' = x + bias over dim 1 (bias [C], undefined: x' = x; a convolution's deferred bias). bf16
// and fp16 accumulate the norm in float32 and round scale/norm once; float32 is
// F.normalize's expression. One fused CUDA kernel for channels-last bf16 x (the VAE's layout
// on CUDA) with up to 1024 channels; elsewhere libtorch.
[[nodiscard]] torch::Tensor channel_rms_norm(const torch::Tensor& x, const torch::Tensor& gamma,
                                             double scale, bool silu, const torch::Tensor& bias = {});

}  // namespace omnidp::models

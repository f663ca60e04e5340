#pragma once
// Convolutions whose reduced-precision (bf16/fp16) results do not depend on the CPU's
// instruction set. On the CPU, libtorch 1.13 runs a bf16 convolution in oneDNN with float32
// accumulation only where the CPU has AVX-512 (BW/VL/DQ); elsewhere (an AMD EPYC with AVX2, say)
// it falls back to im2col + a GEMM that accumulates in bf16, which loses about 25x more
// precision (measured: 9e-2 against 3.6e-3 relative error for one 64-channel 3x3x3 layer).
// These helpers compute a CPU bf16/fp16 convolution in float32 from the rounded inputs and round
// the result once: what oneDNN and cuDNN compute. Other dtypes and devices call libtorch as is.
// docs/models.md, "Precision on the CPU".

#include <torch/torch.h>

namespace omnidp::models {

// torch::conv3d(x, weight, bias, stride, padding) with the rule above; `bias` may be undefined.
[[nodiscard]] torch::Tensor conv3d_fp32_accum(const torch::Tensor& x, const torch::Tensor& weight,
                                              const torch::Tensor& bias, torch::IntArrayRef stride,
                                              torch::IntArrayRef padding);

// torch::conv2d likewise.
[[nodiscard]] torch::Tensor conv2d_fp32_accum(const torch::Tensor& x, const torch::Tensor& weight,
                                              const torch::Tensor& bias, torch::IntArrayRef stride,
                                              torch::IntArrayRef padding);

}  // namespace omnidp::models

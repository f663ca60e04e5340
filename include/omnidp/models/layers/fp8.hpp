#pragma once
// W8A8 FP8 linear layers (docs/models.md, "FP8"): a weight [out, in] is quantized once to
// float8 e4m3 with one float32 scale per output channel (amax / 448); an activation is
// quantized at every call with one scale per row (token); the GEMM runs in cuBLASLt/CUTLASS
// through at::_scaled_mm, both scales applied in its epilogue, bf16 output.
// Available with libtorch >= 2.5 (float8 types, row-wise _scaled_mm) on a GPU of compute
// capability 8.9 or more; fp8_unavailable_reason() says why not. Pure functions; thread-safe.

#include <torch/torch.h>

#include <string>

namespace omnidp::models {

// How an FP8 GEMM sums over K. fast: Hopper's fast accumulation, the partial sums kept in the
// tensor cores' own reduced precision for the whole K (the fastest). exact: the partial sums
// promoted to float32 at intervals (CUTLASS/cuBLASLt's default without fast accumulation):
// slower, closer to the bf16 GEMM over long K.
enum class Fp8Accumulation { fast, exact };

struct Fp8Weight {
  torch::Tensor weight;  // e4m3 [in, out], column-major (the transpose of a row-major [out, in])
  torch::Tensor scale;   // float32 [1, out]
  Fp8Accumulation accumulation = Fp8Accumulation::fast;
  [[nodiscard]] bool defined() const noexcept { return weight.defined(); }
};

// What a model's FP8 path needs besides FP8 GEMMs. deferred_biases: its blocks leave their
// biases to the fused bias kernels (Wan), so fused_elementwise() (layers/fused.hpp) must be on.
enum class Fp8Needs { gemms, deferred_biases };

// The one FP8 availability check: "" when this build can run FP8 GEMMs on `device` (and the
// fused kernels are on, for Fp8Needs::deferred_biases), else the reason (fused kernels off,
// libtorch too old, not a CUDA device, no CUDA device available). Every check below asks it.
// A GPU without FP8 tensor cores (compute capability below 8.9) passes here and fails in
// at::_scaled_mm at the first GEMM.
[[nodiscard]] std::string fp8_unavailable_reason(torch::Device device,
                                                 Fp8Needs needs = Fp8Needs::gemms);

// ModelError "model.quantization fp8: <fp8_unavailable_reason(device, needs)>" where FP8 is
// unavailable: the FP8 functions below and a model's quantize_fp8 before they change anything.
void require_fp8(torch::Device device, Fp8Needs needs = Fp8Needs::gemms);

// A pipeline factory's check of `model.quantization: fp8` before it quantizes: ConfigError on
// model.quantization, "fp8: <fp8_unavailable_reason(device)>", where this build or device cannot.
void require_fp8_config(torch::Device device);

// weight [out, in] (any floating dtype, on the GPU) -> its FP8 form. Throws ModelError where
// require_fp8() does, or when in or out is not a multiple of 16 (the GEMM's alignment).
[[nodiscard]] Fp8Weight quantize_fp8_weight(const torch::Tensor& weight,
                                            Fp8Accumulation accumulation = Fp8Accumulation::fast);

// x [rows, dim] bf16 contiguous -> {e4m3 [rows, dim], float32 scales [rows, 1]}: per row,
// scale = max(amax, 1e-12) / 448 and q = saturate(x / scale). One fused kernel where this
// build has the CUDA kernels, libtorch ops otherwise (the same values).
[[nodiscard]] std::pair<torch::Tensor, torch::Tensor> quantize_fp8_rows(const torch::Tensor& x);

// x [..., in] bf16 -> x @ W^T (+ bias, may be undefined) [..., out] in bf16.
[[nodiscard]] torch::Tensor fp8_linear(const torch::Tensor& x, const Fp8Weight& w,
                                       const torch::Tensor& bias = {});

}  // namespace omnidp::models

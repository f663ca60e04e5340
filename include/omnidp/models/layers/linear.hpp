#pragma once
// Linear: torch::nn::Linear's parameters ("weight" [out, in], "bias" [out]) and forward,
// without libtorch's default initialisation. Every model here is loaded from a checkpoint or
// given seeded random weights right after construction, and libtorch's kaiming-uniform init
// runs on one core behind the default generator's lock: most of a minute for a 5B model.
// The parameters start at zero instead, in float32 on the CPU or in a given ParamSpec (the
// text and vision encoders: built in their final dtype, no float32 detour). Used by every
// model (transformers, text and vision encoders).
// quantize_fp8() makes forward() a W8A8 FP8 GEMM (layers/fp8.hpp, model.quantization fp8).
// Threading: as any torch::nn::Module (one thread at a time); forward() is a pure function.

#include <torch/torch.h>

#include <optional>

#include "omnidp/models/layers/fp8.hpp"
#include "omnidp/models/layers/param_spec.hpp"

namespace omnidp::models {

class LinearImpl : public torch::nn::Cloneable<LinearImpl> {
 public:
  LinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias = true);
  // The parameters in spec's dtype and device, not requiring gradients.
  LinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias,
             const ParamSpec& spec);
  // (Re)creates zero parameters; called by the constructor and by clone().
  void reset() override;
  // x @ weight^T + bias (layers/fused.hpp linear_bias); the FP8 GEMM once quantized.
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  // x @ weight^T without the bias (a row-split layer's partial product), FP8 once quantized.
  [[nodiscard]] torch::Tensor matmul(const torch::Tensor& x) const;
  // Quantizes the weight to FP8 (per output channel) for forward() and matmul(); the weight
  // itself stays (checkpoint names, clone()). Throws ModelError where fp8_unsupported() or the
  // shape is not a multiple of 16.
  void quantize_fp8(Fp8Accumulation accumulation = Fp8Accumulation::fast);
  // quantize_fp8(*accumulation), or back to the weights' dtype for nullopt (drops the FP8 copy).
  void set_fp8(std::optional<Fp8Accumulation> accumulation);
  [[nodiscard]] const Fp8Weight& fp8() const noexcept { return fp8_; }

  torch::Tensor weight;
  torch::Tensor bias;  // undefined without a bias

 private:
  std::int64_t in_features_;
  std::int64_t out_features_;
  bool with_bias_;
  torch::TensorOptions options_;
  bool requires_grad_ = true;
  Fp8Weight fp8_;
};
TORCH_MODULE(Linear);

}  // namespace omnidp::models

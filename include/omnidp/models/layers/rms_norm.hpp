#pragma once
// RMSNorm over the last dimension with a learned `weight` [dim] (initialised to ones), for
// every model. The statistics are float32; the references differ only in how the normalised
// value meets a weight of another dtype than x, so the style names the reference to follow.
// With x and weight in one dtype every style gives the same values. Threading: as any
// torch::nn::Module (one thread at a time).

#include <torch/torch.h>

namespace omnidp::models {

enum class RmsNormStyle {
  // torch.nn.RMSNorm (Wan) and Qwen2RMSNorm: the normalised x rounded to x's dtype, then
  // times weight (the product in the promoted dtype). rms_norm() of layers/fused.hpp.
  torch_nn,
  // Hugging Face T5LayerNorm: the normalised x stays float32, is rounded to the weight's dtype
  // where that is fp16/bf16, times weight (the product in the promoted dtype).
  t5,
  // Diffusers RMSNorm (HunyuanVideo-1.5): t5's expression, the result rounded to x's dtype.
  diffusers,
  // Qwen2RMSNorm: weight * (normalised x rounded to x's dtype), eagerly (never the fused op).
  qwen2,
};

class RMSNormImpl : public torch::nn::Module {
 public:
  // `options`: the weight's dtype and device. The weight does not require gradients.
  RMSNormImpl(std::int64_t dim, double eps, RmsNormStyle style = RmsNormStyle::torch_nn,
              const torch::TensorOptions& options = {});
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;
  [[nodiscard]] double eps() const noexcept { return eps_; }
  torch::Tensor weight;

 private:
  double eps_;
  RmsNormStyle style_;
};
TORCH_MODULE(RMSNorm);

}  // namespace omnidp::models

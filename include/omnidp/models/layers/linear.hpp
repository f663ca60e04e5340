#pragma once
// Linear: torch::nn::Linear's parameters ("weight" [out, in], "bias" [out]) and forward,
// without libtorch's default initialisation. Every model here is loaded from a checkpoint or
// given seeded random weights right after construction, and libtorch's kaiming-uniform init
// runs on one core behind the default generator's lock: most of a minute for a 5B model.
// The parameters start at zero instead. Used by the transformers (Wan, HunyuanVideo-1.5).
// Threading: as any torch::nn::Module (one thread at a time).

#include <torch/torch.h>

namespace omnidp::models {

class LinearImpl : public torch::nn::Cloneable<LinearImpl> {
 public:
  LinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias = true);
  // (Re)creates zero parameters; called by the constructor and by clone().
  void reset() override;
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;
  torch::Tensor bias;  // undefined without a bias

 private:
  std::int64_t in_features_;
  std::int64_t out_features_;
  bool with_bias_;
};
TORCH_MODULE(Linear);

}  // namespace omnidp::models

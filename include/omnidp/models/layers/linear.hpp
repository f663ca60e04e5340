#pragma once
// Linear: torch::nn::Linear's parameters ("weight" [out, in], "bias" [out]) and forward,
// without libtorch's default initialisation. Every model here is loaded from a checkpoint or
// given seeded random weights right after construction, and libtorch's kaiming-uniform init
// runs on one core behind the default generator's lock: most of a minute for a 5B model.
// The parameters start at zero instead, in float32 on the CPU or in a given ParamSpec (the
// text and vision encoders: built in their final dtype, no float32 detour). Used by every
// model (transformers, text and vision encoders).
// A replicated layer in the weights' dtype; the tensor-parallel layers and their LinearMethod
// (FP8 included) are layers/parallel_linear.hpp.
// Threading: as any torch::nn::Module (one thread at a time); forward() is a pure function.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

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
  // x @ weight^T + bias (layers/fused.hpp linear_bias).
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;

  torch::Tensor weight;
  torch::Tensor bias;  // undefined without a bias

 private:
  std::int64_t in_features_;
  std::int64_t out_features_;
  bool with_bias_;
  torch::TensorOptions options_;
  bool requires_grad_ = true;
};
TORCH_MODULE(Linear);

// A weightless module registered under `parent` as `name`, so that checkpoint names nest
// ("x_embedder.proj", "norm_out.linear").
[[nodiscard]] std::shared_ptr<torch::nn::Module> register_container(torch::nn::Module& parent,
                                                                    const std::string& name);

// A Linear(in, out) with a bias, registered under `parent` as `name`.
[[nodiscard]] Linear register_linear(torch::nn::Module& parent, const std::string& name,
                                     std::int64_t in, std::int64_t out);

}  // namespace omnidp::models

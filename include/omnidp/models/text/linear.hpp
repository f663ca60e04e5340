#pragma once
// Parameter-holding building blocks of the text encoders whose parameters are allocated
// uninitialised in a chosen dtype (no random-init pass, no float32 detour): a 7B-parameter
// encoder built for checkpoint loading costs its final size only. Parameter names are
// torch.nn's (`weight`, `bias`), so checkpoint names match. Seeded weights come from
// init_random_weights (weights/state_dict.hpp).
// Not thread-safe with respect to one module; forward() is a pure function of its inputs.

#include <torch/torch.h>

namespace omnidp::models::text {

// Where and how the parameters of a module are allocated.
struct ParamSpec {
  torch::ScalarType dtype = torch::kFloat32;
  torch::Device device = torch::kCPU;
  [[nodiscard]] torch::TensorOptions options() const { return torch::TensorOptions().dtype(dtype).device(device); }
};

// y = x W^T (+ b), W [out, in].
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(std::int64_t in_features, std::int64_t out_features, bool bias, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x) const;

  torch::Tensor weight;
  torch::Tensor bias;  // undefined without bias
};
TORCH_MODULE(Linear);

// Rows of `weight` [num, dim] selected by integer ids.
class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(std::int64_t num_embeddings, std::int64_t dim, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& ids) const;

  torch::Tensor weight;
};
TORCH_MODULE(Embedding);

// Sets requires_grad false on every parameter (the encoders are inference-only).
void freeze(torch::nn::Module& module);

}  // namespace omnidp::models::text

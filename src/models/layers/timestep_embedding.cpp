#include "omnidp/models/layers/timestep_embedding.hpp"

#include <cmath>

namespace omnidp::models {

torch::Tensor timestep_sinusoid(const torch::Tensor& timesteps, std::int64_t dim) {
  const std::int64_t half = dim / 2;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(timesteps.device());
  const auto exponent =
      torch::arange(0, half, opts) * (-std::log(10000.0)) / static_cast<double>(half);
  const auto args =
      timesteps.reshape({-1, 1}).to(torch::kFloat32) * torch::exp(exponent).unsqueeze(0);
  auto emb = torch::cat({torch::cos(args), torch::sin(args)}, -1);
  if (dim % 2 == 1) emb = torch::constant_pad_nd(emb, {0, 1});
  return emb;
}

EmbeddingMlpImpl::EmbeddingMlpImpl(std::int64_t in, std::int64_t out,
                                   EmbeddingActivation activation, const ParamSpec& spec)
    : activation_(activation) {
  linear_1 = register_module("linear_1", Linear(in, out, true, spec));
  linear_2 = register_module("linear_2", Linear(out, out, true, spec));
}

torch::Tensor EmbeddingMlpImpl::forward(const torch::Tensor& x) {
  const auto h = linear_1->forward(x);
  return linear_2->forward(activation_ == EmbeddingActivation::silu ? torch::silu(h)
                                                                    : torch::gelu(h, "tanh"));
}

}  // namespace omnidp::models

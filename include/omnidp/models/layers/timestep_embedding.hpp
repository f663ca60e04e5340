#pragma once
// The timestep and condition embeddings of every diffusion transformer here: the sinusoidal
// embedding (Diffusers get_timestep_embedding(t, dim, flip_sin_to_cos=True,
// downscale_freq_shift=0); thread-safe, a pure function) and the two-layer MLP that Diffusers
// writes as TimestepEmbedding and as PixArtAlphaTextProjection (a module: one thread at a time).

#include <torch/torch.h>

#include "omnidp/models/layers/linear.hpp"
#include "omnidp/models/layers/param_spec.hpp"

namespace omnidp::models {

// timesteps (any shape, flattened: N values) -> [N, dim] float32 on their device:
// [cos(t*f), sin(t*f)] with f_i = exp(-ln(10000) * i / (dim/2)), zero-padded by one column
// for an odd dim.
[[nodiscard]] torch::Tensor timestep_sinusoid(const torch::Tensor& timesteps, std::int64_t dim);

// The activation between the MLP's two layers.
enum class EmbeddingActivation { silu, gelu_tanh };

// linear_1 (in -> out) -> activation -> linear_2 (out -> out), the checkpoint names of
// Diffusers' TimestepEmbedding (SiLU: the time embedders) and PixArtAlphaTextProjection (SiLU or
// GELU tanh: the text embedders). Parameters in spec's dtype and device.
class EmbeddingMlpImpl : public torch::nn::Module {
 public:
  EmbeddingMlpImpl(std::int64_t in, std::int64_t out, EmbeddingActivation activation,
                   const ParamSpec& spec = {});
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& x);
  Linear linear_1{nullptr}, linear_2{nullptr};

 private:
  EmbeddingActivation activation_;
};
TORCH_MODULE(EmbeddingMlp);

}  // namespace omnidp::models

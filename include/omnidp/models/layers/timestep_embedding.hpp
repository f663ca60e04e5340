#pragma once
// The sinusoidal timestep embedding of every diffusion transformer here: Diffusers
// get_timestep_embedding(t, dim, flip_sin_to_cos=True, downscale_freq_shift=0). Thread-safe
// (pure function of its inputs).

#include <torch/torch.h>

namespace omnidp::models {

// timesteps (any shape, flattened: N values) -> [N, dim] float32 on their device:
// [cos(t*f), sin(t*f)] with f_i = exp(-ln(10000) * i / (dim/2)), zero-padded by one column
// for an odd dim.
[[nodiscard]] torch::Tensor timestep_sinusoid(const torch::Tensor& timesteps, std::int64_t dim);

}  // namespace omnidp::models

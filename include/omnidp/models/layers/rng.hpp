#pragma once
// Initial noise exactly as the Python pipelines draw it:
// torch.randn(shape, generator=torch.Generator('cpu').manual_seed(seed)) — libtorch's
// CPUGeneratorImpl (mt19937) with the same normal sampling kernels, so the numbers are the
// same bit for bit (checked by the refcheck case rng_cpu_randn). Thread-safe: every call uses
// its own generator.

#include <torch/torch.h>

#include <cstdint>

namespace omnidp::models {

// float32 CPU tensor of `shape`; move it to the device afterwards.
[[nodiscard]] torch::Tensor randn_cpu(at::IntArrayRef shape, std::uint64_t seed);

}  // namespace omnidp::models

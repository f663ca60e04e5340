#include "omnidp/models/layers/rng.hpp"

#include <ATen/CPUGeneratorImpl.h>

namespace omnidp::models {

torch::Tensor randn_cpu(at::IntArrayRef shape, std::uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return torch::randn(shape, gen, torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCPU));
}

}  // namespace omnidp::models

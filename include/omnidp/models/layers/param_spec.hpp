#pragma once
// Where and how the parameters of a module are allocated (dtype and device), for the modules
// that allocate their parameters in their final dtype (the text and vision encoders). Plain data.

#include <torch/torch.h>

namespace omnidp::models {

struct ParamSpec {
  torch::ScalarType dtype = torch::kFloat32;
  torch::Device device = torch::kCPU;
  [[nodiscard]] torch::TensorOptions options() const {
    return torch::TensorOptions().dtype(dtype).device(device);
  }
};

}  // namespace omnidp::models

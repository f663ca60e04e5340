#pragma once
// Where a model's parameters live and in which dtype: one setup for every pipeline factory
// (device check, dtype, process-wide torch settings) and the allocation spec the modules take.
// Not thread-safe (model_placement applies process-wide settings; see torch_settings.hpp).

#include <torch/torch.h>

#include <string>

#include "omnidp/config/config.hpp"
#include "omnidp/models/layers/param_spec.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {

// model.dtype as a torch dtype.
[[nodiscard]] torch::ScalarType to_scalar_type(DType dtype) noexcept;

// What a factory builds its modules with: the binding's device and model.dtype, and the name
// the pipeline reports (the binding's, else the device's).
struct ModelPlacement {
  ParamSpec spec;
  std::string device_name;
};

// The factories' first step: a CUDA binding on a machine or libtorch without CUDA is a
// ConfigError on model.device; then apply_torch_settings(config). Call on the thread that
// will run the model.
[[nodiscard]] ModelPlacement model_placement(const Config& config, const DeviceBinding& binding);

// Sets requires_grad false on every parameter (the models are inference-only).
void freeze(torch::nn::Module& module);

}  // namespace omnidp::models

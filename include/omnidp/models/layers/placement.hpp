#pragma once
// Where a model's parameters live and in which dtype: one setup for every pipeline factory
// (device check, dtype, process-wide torch settings) and the allocation spec the modules take.
// Not thread-safe (model_placement applies process-wide settings; see torch_settings.hpp).

#include <torch/torch.h>

#include <string>
#include <vector>

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

// A model's declared list of modules kept in float32 whatever model.dtype (diffusers'
// `_keep_in_fp32_modules`): module names, each matched against every component of a
// parameter's dotted name ("time_embedder" keeps "condition_embedder.time_embedder.linear_1.weight").
using Float32Modules = std::vector<std::string>;

// True when a component of `parameter` (a dotted name) is one of `modules`.
[[nodiscard]] bool kept_in_float32(const std::string& parameter, const Float32Modules& modules);

// Converts every parameter of `root` in place (set_data: handles and views stay valid) to
// `device`, in float32 where kept_in_float32, else in `dtype`; buffers move to `device` only.
void to_dtype_keeping_float32(torch::nn::Module& root, torch::Device device,
                              torch::ScalarType dtype, const Float32Modules& modules);

// Waits for the work queued on `device` (CUDA: every stream of its index; CPU: returns).
void synchronize(torch::Device device);

// Sets requires_grad false on every parameter (the models are inference-only).
void freeze(torch::nn::Module& module);

}  // namespace omnidp::models

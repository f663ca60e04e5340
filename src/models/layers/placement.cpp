#include "omnidp/models/layers/placement.hpp"

#include <algorithm>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/torch_settings.hpp"

namespace omnidp::models {

torch::ScalarType to_scalar_type(DType dtype) noexcept {
  switch (dtype) {
    case DType::bf16: return torch::kBFloat16;
    case DType::fp16: return torch::kFloat16;
    case DType::fp32: break;
  }
  return torch::kFloat32;
}

ModelPlacement model_placement(const Config& config, const DeviceBinding& binding) {
  ModelPlacement placement;
  if (binding.kind == DeviceKind::cuda) {
    if (!torch::cuda::is_available()) {
      throw ConfigError("model.device",
                        "cuda requested but this libtorch/machine has no CUDA device");
    }
    placement.spec.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(binding.index));
  }
  placement.spec.dtype = to_scalar_type(config.model.dtype);
  placement.device_name = binding.name.empty() ? placement.spec.device.str() : binding.name;
  apply_torch_settings(config);
  return placement;
}

bool kept_in_float32(const std::string& parameter, const Float32Modules& modules) {
  std::size_t start = 0;
  while (start <= parameter.size()) {
    const auto end = std::min(parameter.find('.', start), parameter.size());
    const auto part = parameter.substr(start, end - start);
    if (std::find(modules.begin(), modules.end(), part) != modules.end()) return true;
    start = end + 1;
  }
  return false;
}

void to_dtype_keeping_float32(torch::nn::Module& root, torch::Device device,
                              torch::ScalarType dtype, const Float32Modules& modules) {
  torch::NoGradGuard no_grad;
  for (auto& item : root.named_parameters(true)) {
    const auto target = kept_in_float32(item.key(), modules) ? torch::kFloat32 : dtype;
    item.value().set_data(item.value().to(device, target));
  }
  for (auto& item : root.named_buffers(true)) item.value().set_data(item.value().to(device));
}

void synchronize(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

void freeze(torch::nn::Module& module) {
  for (auto& p : module.parameters(true)) p.set_requires_grad(false);
}

}  // namespace omnidp::models

#include "omnidp/models/layers/placement.hpp"

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

void freeze(torch::nn::Module& module) {
  for (auto& p : module.parameters(true)) p.set_requires_grad(false);
}

}  // namespace omnidp::models

#include "omnidp/models/registry/registry.hpp"

#include <mutex>

#include "omnidp/common/error.hpp"
#include "omnidp/models/model_table.hpp"

namespace omnidp::models {
namespace detail {
void register_builtin_models_into(ModelTable& table);  // builtin_models.cpp (generated)
}

void register_builtin_models() {
  static std::once_flag once;
  std::call_once(once, [] { detail::register_builtin_models_into(model_table()); });
}

std::unique_ptr<Pipeline> create_pipeline(const Config& config, const DeviceBinding& device) {
  register_builtin_models();
  const auto* registration = model_table().find(config.model.name);
  if (registration == nullptr || !registration->create) {
    throw ConfigError("model.name",
                      "model '" + config.model.name + "' is not available in this build");
  }
  return registration->create(config, device);
}

std::vector<std::string> available_pipelines() {
  register_builtin_models();
  std::vector<std::string> names;
  for (const auto& name : model_table().names()) {
    if (model_table().find(name)->create) names.push_back(name);
  }
  return names;
}

}  // namespace omnidp::models

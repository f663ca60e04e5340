#include "omnidp/models/registry/registry.hpp"

#include <algorithm>
#include <array>

#include "omnidp/common/error.hpp"
#include "omnidp/models/hv15/factory.hpp"
#include "omnidp/models/synthetic.hpp"
#include "omnidp/models/wan/factory.hpp"

namespace omnidp::models {
namespace {

using Create = std::unique_ptr<Pipeline> (*)(const Config&, const DeviceBinding&);

struct Entry {
  const char* name;
  Create create;
};

std::unique_ptr<Pipeline> make_synthetic(const Config& config, const DeviceBinding& device) {
  return std::make_unique<SyntheticPipeline>(config, device);
}

// One line per model; each model's library adds its own entry (and links itself in
// src/models/registry/CMakeLists.txt).
constexpr std::array kEntries{
    Entry{"synthetic", &make_synthetic},
    Entry{"hunyuanvideo-1.5", &hv15::create_hunyuanvideo15_pipeline},
    Entry{"tiny-wan", &wan::create_wan_pipeline},
    Entry{"wan2.2-ti2v-5b", &wan::create_wan_pipeline},
};

}  // namespace

std::unique_ptr<Pipeline> create_pipeline(const Config& config, const DeviceBinding& device) {
  const auto it = std::find_if(kEntries.begin(), kEntries.end(), [&](const Entry& e) {
    return config.model.name == e.name;
  });
  if (it == kEntries.end()) {
    throw ConfigError("model.name",
                      "model '" + config.model.name + "' is not available in this build");
  }
  return it->create(config, device);
}

std::vector<std::string> available_pipelines() {
  std::vector<std::string> names;
  for (const auto& e : kEntries) names.emplace_back(e.name);
  return names;
}

}  // namespace omnidp::models

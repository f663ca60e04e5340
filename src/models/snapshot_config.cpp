#include "omnidp/models/snapshot_config.hpp"

#include <nlohmann/json.hpp>

#include "omnidp/common/error.hpp"
#include "omnidp/models/config_json.hpp"

namespace omnidp::models {
namespace fs = std::filesystem;
std::optional<fs::path> component_file(const fs::path& folder, const char* alt_name) {
  std::error_code ec;
  for (const char* name : {"config.json", alt_name}) {
    if (fs::is_regular_file(folder / name, ec)) return folder / name;
  }
  return std::nullopt;
}

std::optional<double> snapshot_number(const fs::path& file, const char* key,
                                      std::string (*check)(double)) {
  const auto j = read_json_object(file);
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw WeightsError(file.string(), std::string(key) + " is not a number");
  const double value = it->get<double>();
  if (const std::string reason = check(value); !reason.empty()) {
    throw WeightsError(file.string(), std::string(key) + ": " + reason);
  }
  return value;
}

void snapshot_flow_shift(const Config& config, GenerationDefaults& d, const char* other_key) {
  if (config.generation.flow_shift) return;
  const fs::path root(config.model.path);
  const auto file = component_file(root / "scheduler", "scheduler_config.json");
  if (!file) return;
  const auto cls = snapshot_string(*file, "_class_name");
  const char* key = cls == "UniPCMultistepScheduler"           ? "flow_shift"
                    : cls == "FlowMatchEulerDiscreteScheduler" ? "shift"
                                                               : other_key;
  if (const auto v = snapshot_number(*file, key, &check_flow_shift)) {
    d.flow_shift = ValueOrigin{*v, "snapshot " + file->lexically_relative(root).string()};
  }
}

std::string snapshot_string(const fs::path& file, const char* key) {
  const auto j = read_json_object(file);
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

}  // namespace omnidp::models

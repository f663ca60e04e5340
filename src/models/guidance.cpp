#include "omnidp/models/guidance.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "omnidp/common/error.hpp"

namespace omnidp::models {

GuidanceOptions guidance_options_from_json(const nlohmann::json& config, const std::string& origin) {
  GuidanceOptions g;
  if (!config.is_object()) throw ModelError("guider config is not an object", {origin});
  try {
    const auto cls = config.value("_class_name", std::string("ClassifierFreeGuidance"));
    if (cls != "ClassifierFreeGuidance") {
      throw ModelError("guider '" + cls + "' is not supported (only ClassifierFreeGuidance)",
                       {origin});
    }
    g.enabled = config.value("enabled", true);
    if (config.contains("guidance_scale") && !config.at("guidance_scale").is_null()) {
      g.guidance_scale = config.at("guidance_scale").get<double>();
    }
    g.guidance_rescale = config.value("guidance_rescale", 0.0);
    g.start = config.value("start", 0.0);
    g.stop = config.value("stop", 1.0);
    g.use_original_formulation = config.value("use_original_formulation", false);
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(std::string("bad guider config: ") + e.what(), {origin});
  }
  return g;
}

bool cfg_enabled(double scale, const GuidanceOptions& g, int step, int steps) {
  if (!g.enabled) return false;
  const auto first = static_cast<int>(g.start * steps);
  const auto last = static_cast<int>(g.stop * steps);
  const bool in_range = first <= step && step < last;
  const double neutral = g.use_original_formulation ? 0.0 : 1.0;
  const bool close = std::abs(scale - neutral) <= 1e-9 * std::max(std::abs(scale), std::abs(neutral));
  return in_range && !close;
}

bool step_guided(const StepGuidance& g, double scale, int step, int steps) {
  return g.rule == GuidanceRule::guider ? cfg_enabled(scale, g.guider, step, steps) : scale > 1.0;
}

int guided_steps(const StepGuidance& g, double scale, int steps) {
  int guided = 0;
  for (int i = 0; i < steps; ++i) guided += step_guided(g, scale, i, steps) ? 1 : 0;
  return guided;
}

}  // namespace omnidp::models

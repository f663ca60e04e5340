#pragma once
// Which denoising steps of a request are guided (classifier-free guidance: two transformer
// branches instead of one) and with what options: the one rule the pipelines, the cost model
// and --dry-run read. Torch-free (omnidp::model_api); pure functions, thread-safe.

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

namespace omnidp::models {

// Classifier-free guidance as Diffusers' ClassifierFreeGuidance (a snapshot's
// guider/config.json; the defaults are a guider without a config).
struct GuidanceOptions {
  bool enabled = true;  // false: never CFG (one transformer call per step)
  // The config's own guidance_scale (the snapshot's default for requests that set none).
  std::optional<double> guidance_scale;
  double guidance_rescale = 0.0;
  double start = 0.0;  // CFG runs on steps [int(start n), int(stop n))
  double stop = 1.0;
  bool use_original_formulation = false;
};

// Guidance options from a Diffusers guider/config.json (ClassifierFreeGuidance). Throws
// ModelError naming `origin` for another guider class or a key of the wrong type.
[[nodiscard]] GuidanceOptions guidance_options_from_json(const nlohmann::json& config,
                                                         const std::string& origin);

// ClassifierFreeGuidance._is_cfg_enabled: step `step` of `steps` is guided when guidance is
// enabled, the step lies in [int(start steps), int(stop steps)) and `scale` is not the neutral
// scale (1; 0 in the original formulation).
[[nodiscard]] bool cfg_enabled(double scale, const GuidanceOptions& g, int step, int steps);

// How a model decides that a step is guided.
enum class GuidanceRule {
  // Diffusers' pipelines without a guider (the Wan family): every step when guidance_scale > 1.
  scale_above_one,
  // A ClassifierFreeGuidance guider (HunyuanVideo-1.5): cfg_enabled of each step, which may
  // leave steps unguided (its start/stop window, enabled false) and guides a scale below 1.
  guider,
};

// A model's guidance: its rule and, for GuidanceRule::guider, the guider's options.
struct StepGuidance {
  GuidanceRule rule = GuidanceRule::scale_above_one;
  GuidanceOptions guider;  // read under GuidanceRule::guider only
};

// Step `step` of `steps` at `scale` is guided under `g`.
[[nodiscard]] bool step_guided(const StepGuidance& g, double scale, int step, int steps);
// How many of `steps` steps at `scale` are guided (0 .. steps).
[[nodiscard]] int guided_steps(const StepGuidance& g, double scale, int steps);

}  // namespace omnidp::models

#pragma once
// A request resolved once into what a pipeline samples: its size as sampled and which of its
// steps are guided. The pipelines (generate, flops), the cost model and --dry-run all read it,
// so that each rule (the reference's size rounding, the model's guidance rule) lives here once.
// Torch-free (omnidp::model_api); pure functions, thread-safe.

#include <vector>

#include "omnidp/manifest/request.hpp"
#include "omnidp/models/guidance.hpp"

namespace omnidp {
struct ModelInfo;  // models/model_info.hpp
}  // namespace omnidp

namespace omnidp::models {

// What a model's resolution of a request depends on: its VAE and patch factors, whether it
// rounds a size as its reference pipeline does, and its guidance rule. A pipeline fills it
// from its loaded configs; plan_rules(ModelInfo) from the model's static facts.
struct PlanRules {
  int vae_temporal = 4;  // latent frames = (frames - 1) / vae_temporal + 1
  int vae_spatial = 16;
  int patch_h = 1;
  int patch_w = 1;
  // true (the Wan family, as diffusers' WanPipeline): frames not of the form k x vae_temporal
  // + 1 to floor(frames / vae_temporal) x vae_temporal + 1 (80 -> 81), height and width down to
  // multiples of vae_spatial x patch; false: the size as requested (the pipeline checks it).
  bool round_size = false;
  StepGuidance guidance;
};

// A video's frame count and height x width.
struct VideoSize {
  int num_frames = 0;
  int height = 0;
  int width = 0;
  friend bool operator==(const VideoSize&, const VideoSize&) = default;
};

struct RequestPlan {
  VideoSize size;  // as sampled: sample_size(rules, the request's size)
  int steps = 0;   // num_inference_steps
  double guidance_scale = 1.0;
  std::vector<bool> guided;  // per step: step_guided(rules.guidance, guidance_scale, i, steps)
  // How many steps are guided; a request with any needs the negative prompt.
  [[nodiscard]] int guided_steps() const noexcept;
  // Transformer passes of the whole request: one per step, two per guided step.
  [[nodiscard]] int passes() const noexcept { return steps + guided_steps(); }
};

// The size a pipeline samples for a requested one (PlanRules::round_size).
[[nodiscard]] VideoSize sample_size(const PlanRules& rules, const VideoSize& requested);

// `request` resolved under `rules`.
[[nodiscard]] RequestPlan plan_request(const PlanRules& rules, const Request& request);

// The rules of a model as its static facts describe it (ModelInfo's VAE and patch factors,
// rounds_size, guidance): what the cost model and --dry-run resolve a request with.
[[nodiscard]] PlanRules plan_rules(const ModelInfo& info);

}  // namespace omnidp::models

#include "omnidp/models/request_plan.hpp"

#include <algorithm>

#include "omnidp/models/model_info.hpp"

namespace omnidp::models {

int RequestPlan::guided_steps() const noexcept {
  return static_cast<int>(std::count(guided.begin(), guided.end(), true));
}

VideoSize sample_size(const PlanRules& rules, const VideoSize& requested) {
  if (!rules.round_size) return requested;
  // The reference's rounding (diffusers' WanPipeline, with a warning there too).
  const int t = rules.vae_temporal;
  const int frames =
      requested.num_frames % t != 1 ? requested.num_frames / t * t + 1 : requested.num_frames;
  const int h_mult = rules.vae_spatial * rules.patch_h;
  const int w_mult = rules.vae_spatial * rules.patch_w;
  return {std::max(frames, 1), requested.height / h_mult * h_mult, requested.width / w_mult * w_mult};
}

RequestPlan plan_request(const PlanRules& rules, const Request& request) {
  RequestPlan plan;
  plan.size = sample_size(rules, {request.num_frames, request.height, request.width});
  plan.steps = request.num_inference_steps;
  plan.guidance_scale = request.guidance_scale;
  for (int i = 0; i < plan.steps; ++i) {
    plan.guided.push_back(step_guided(rules.guidance, plan.guidance_scale, i, plan.steps));
  }
  return plan;
}

PlanRules plan_rules(const ModelInfo& info) {
  return {info.vae_temporal, info.vae_spatial, info.patch_h,
          info.patch_w,      info.rounds_size, info.guidance};
}

}  // namespace omnidp::models

#include "omnidp/models/pipelines/guided_step.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/models/layers/collective_ops.hpp"

namespace omnidp::models {

torch::Tensor apply_guidance(const torch::Tensor& cond, const torch::Tensor& uncond, double scale,
                             const GuidanceOptions& g) {
  auto pred = g.use_original_formulation ? cond + scale * (cond - uncond)
                                         : uncond + scale * (cond - uncond);
  if (g.guidance_rescale > 0.0) {
    std::vector<std::int64_t> dims;
    for (std::int64_t d = 1; d < cond.dim(); ++d) dims.push_back(d);
    const auto std_text = cond.std(dims, /*unbiased=*/true, /*keepdim=*/true);
    const auto std_cfg = pred.std(dims, true, true);
    const auto rescaled = pred * (std_text / std_cfg);
    pred = g.guidance_rescale * rescaled + (1.0 - g.guidance_rescale) * pred;
  }
  return pred;
}

void check_cfg_group(const Collective* group) {
  if (group != nullptr && group->size() != 2) {
    throw ModelError(fmt::format("CFG-parallel needs a group of 2 ranks, not {}", group->size()));
  }
}

torch::Tensor guided_prediction(const CfgLayout& layout, bool guided, double scale,
                                const GuidanceOptions& g,
                                const std::function<torch::Tensor(CfgBranch)>& forward,
                                const torch::Tensor& like) {
  if (layout.group != nullptr) {
    const bool first = layout.group->rank() == 0;
    if (!guided) {  // one branch only: the leader's prediction for both ranks
      return broadcast(*layout.group,
                       first ? forward(CfgBranch::conditional) : torch::empty_like(like), 0);
    }
    const auto both = all_gather(
        *layout.group, forward(first ? CfgBranch::conditional : CfgBranch::unconditional));
    return apply_guidance(both[0], both[1], scale, g);
  }
  if (!guided) return forward(CfgBranch::conditional);
  if (layout.batched) {
    const auto both = forward(CfgBranch::both);
    return apply_guidance(both.narrow(0, 0, 1), both.narrow(0, 1, 1), scale, g);
  }
  const auto cond = forward(CfgBranch::conditional);
  return apply_guidance(cond, forward(CfgBranch::unconditional), scale, g);
}

void run_denoising_steps(int steps, const GenerateContext* ctx, const torch::Device& device,
                         const std::function<void(int)>& step) {
  for (int i = 0; i < steps; ++i) {
    bool stop = ctx != nullptr && ctx->abandoned && ctx->abandoned();
    if (ctx != nullptr)
      stop = group_step({ctx->cfg, ctx->sequence, ctx->tensor}, stop, i, steps, device);
    if (stop) throw ModelError(fmt::format("abandoned at step {}/{}", i, steps));
    step(i);
    if (ctx != nullptr && ctx->on_step) ctx->on_step(i + 1, steps);
  }
}

bool group_leader(const GenerateContext* ctx) noexcept {
  if (ctx == nullptr) return true;
  for (const auto* axis : {ctx->cfg, ctx->sequence, ctx->tensor}) {
    if (axis != nullptr && axis->rank() != 0) return false;
  }
  return true;
}

void require_finite_latents(const torch::Tensor& latents) {
  const auto bad = torch::logical_not(torch::isfinite(latents)).sum().item<std::int64_t>();
  if (bad == 0) return;
  throw ModelError(fmt::format(
      "the latents are not finite after the last denoising step ({} of {} values NaN or infinite): "
      "the sampling diverged (check guidance_scale, flow_shift and the weights)",
      bad, latents.numel()));
}

}  // namespace omnidp::models

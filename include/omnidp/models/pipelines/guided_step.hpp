#pragma once
// The denoising step every pipeline shares: classifier-free guidance as Diffusers'
// ClassifierFreeGuidance (guiders/classifier_free_guidance.py), the ways its two branches run
// on a rank (one batch of 2, two forwards, or one branch per rank of a CFG-parallel group), the
// group's stop check and the progress callback around each step, and which rank of a
// parallel group decodes. Every rank of a replica group calls these in step with its peers;
// the functions are pure apart from the collectives and the callbacks they are given.

#include <torch/torch.h>

#include <functional>
#include <optional>

#include "omnidp/collective/collective.hpp"
#include "omnidp/models/guidance.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {

// GuidanceOptions, cfg_enabled: models/guidance.hpp.

// uncond + scale (cond - uncond) (cond + scale (cond - uncond) in the original formulation),
// then guidance_rescale > 0 blends in the prediction rescaled to cond's standard deviation over
// all but dim 0 (rescale_noise_cfg).
[[nodiscard]] torch::Tensor apply_guidance(const torch::Tensor& cond, const torch::Tensor& uncond,
                                           double scale, const GuidanceOptions& g = {});

// The branch a transformer forward computes: the prompt's, the negative prompt's, or both as
// one batch of 2 (conditional first).
enum class CfgBranch { conditional, unconditional, both };

// How the branches of a guided step run on this rank.
struct CfgLayout {
  // CFG-parallel: a group of 2, rank 0 runs the conditional branch, rank 1 the unconditional
  // one. Null: this rank runs both.
  Collective* group = nullptr;
  bool batched = false;  // without a group: both branches as one batch of 2
};

// ModelError unless `group` is null or has 2 ranks.
void check_cfg_group(const Collective* group);

// One step's noise prediction. `forward(branch)` runs the transformer ([1, ...] per branch,
// [2, ...] for both). An unguided step runs the conditional branch alone (in a group on rank 0,
// broadcast to rank 1, which passes `like`: the prediction's shape and dtype). A guided step
// runs both branches as the layout says and combines them with apply_guidance(scale, g); in a
// group each rank runs its branch and all-gathers the other's, so both hold the same result.
[[nodiscard]] torch::Tensor guided_prediction(const CfgLayout& layout, bool guided, double scale,
                                              const GuidanceOptions& g,
                                              const std::function<torch::Tensor(CfgBranch)>& forward,
                                              const torch::Tensor& like);

// Runs `step(i)` for i = 0 .. steps-1. Before each step the group agrees whether to stop
// (ctx->abandoned on any rank, over the ctx's cfg, sequence and tensor axes: group_step) and
// throws ModelError "abandoned at step i/steps" if so; after each, ctx->on_step(i + 1, steps).
// `device`: where a device-memory backend sums the decision. ctx may be null (one rank).
void run_denoising_steps(int steps, const GenerateContext* ctx, const torch::Device& device,
                         const std::function<void(int)>& step);

// Every pipeline's check before it decodes: ModelError "the latents are not finite after the
// last denoising step (N of M values NaN or infinite): the sampling diverged (...)" where
// `latents` holds a NaN or an infinity (a video decoded from them would be black or saturated,
// and stored as if it were fine). One device synchronisation.
void require_finite_latents(const torch::Tensor& latents);

// True on the rank that decodes and returns the video: rank 0 of every axis of ctx (every
// rank without a ctx).
[[nodiscard]] bool group_leader(const GenerateContext* ctx) noexcept;

}  // namespace omnidp::models

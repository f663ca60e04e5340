#pragma once
// The a-priori cost of a request (torch-free): how much work a diffusion transformer does for
// it, from the model's static facts (describe_model). Used by the coordinator to order work
// and estimate ETAs (runtime/cost_model.hpp calibrates it online) and by the synthetic model
// to decide how long to take. Pure functions; thread-safe.
//
//   frames, height, width, guided steps: models::plan_request (models/request_plan.hpp)
//   latent_frames = (frames - 1) / vae_temporal + 1
//   tokens        = latent_frames / patch_t x (height / vae_spatial / patch_h)
//                                           x (width / vae_spatial / patch_w)
//   passes        = steps + guided steps        (a guided step runs two branches: info.guidance)
//   cost          = passes x (a x tokens^2 + b x tokens)
// with a = 4 x layers x hidden (attention scores and values) and b = 24 x layers x hidden^2
// (projections and a 4x FFN): FLOPs per token pair and per token of one transformer pass.

#include "omnidp/manifest/request.hpp"
#include "omnidp/models/cost_terms.hpp"
#include "omnidp/models/model_info.hpp"

namespace omnidp {

[[nodiscard]] double latent_tokens(const ModelInfo& info, int frames, int height, int width);
[[nodiscard]] CostFeatures cost_features(const ModelInfo& info, const Request& request);
[[nodiscard]] CostCoefficients prior_coefficients(const ModelInfo& info);
// prior_coefficients(info).apply(cost_features(info, request)).
[[nodiscard]] double prior_cost(const ModelInfo& info, const Request& request);

}  // namespace omnidp

#include "omnidp/models/cost.hpp"

#include "omnidp/models/request_plan.hpp"

namespace omnidp {

double latent_tokens(const ModelInfo& info, int frames, int height, int width) {
  const int latent_count = (frames - 1) / info.vae_temporal + 1;  // whole latent frames
  const double latent_frames = static_cast<double>(latent_count);
  const double spatial = static_cast<double>(info.vae_spatial);
  return (latent_frames / info.patch_t) * (height / spatial / info.patch_h) *
         (width / spatial / info.patch_w);
}

CostFeatures cost_features(const ModelInfo& info, const Request& request) {
  // The size the model samples and its guided steps, resolved as the pipeline resolves them.
  const auto plan = models::plan_request(models::plan_rules(info), request);
  const auto& size = plan.size;
  const double tokens = latent_tokens(info, size.num_frames, size.height, size.width);
  const double passes = static_cast<double>(plan.passes());
  return CostFeatures{passes * tokens * tokens, passes * tokens};
}

CostCoefficients prior_coefficients(const ModelInfo& info) {
  if (info.cost_prior) return *info.cost_prior;
  const double layers = info.num_layers > 0 ? info.num_layers : 1;
  const double hidden = info.hidden_size > 0 ? info.hidden_size : 1;
  return CostCoefficients{4.0 * layers * hidden, 24.0 * layers * hidden * hidden};
}

double prior_cost(const ModelInfo& info, const Request& request) {
  return prior_coefficients(info).apply(cost_features(info, request));
}

}  // namespace omnidp

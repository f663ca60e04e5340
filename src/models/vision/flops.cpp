#include "omnidp/models/vision/flops.hpp"

#include <algorithm>

namespace omnidp::models::vision {

namespace {

// The patch embedding over the patches, the layers over n tokens.
double vision_tower_flops(const SiglipVisionOptions& o, double n, double layers) {
  const double patches = static_cast<double>(o.num_patches());
  const double d = static_cast<double>(o.hidden_size);
  const double mlp = static_cast<double>(o.intermediate_size);
  const double patch = static_cast<double>(o.num_channels * o.patch_size * o.patch_size);
  const double per_layer = 2.0 * n * (4.0 * d * d + 2.0 * d * mlp) + 4.0 * n * n * d;
  return 2.0 * patches * patch * d + layers * per_layer;
}

}  // namespace

double siglip_vision_flops(const SiglipVisionOptions& o) {
  return vision_tower_flops(o, static_cast<double>(o.num_patches()),
                            static_cast<double>(o.num_hidden_layers));
}

double clip_vision_flops(const SiglipVisionOptions& o) {
  return vision_tower_flops(o, static_cast<double>(o.num_patches() + 1),
                            static_cast<double>(std::max<std::int64_t>(o.num_hidden_layers - 1, 0)));
}

}  // namespace omnidp::models::vision

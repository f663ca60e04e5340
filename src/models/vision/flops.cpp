#include "omnidp/models/vision/flops.hpp"

namespace omnidp::models::vision {

double siglip_vision_flops(const SiglipVisionOptions& o) {
  const double n = static_cast<double>(o.num_patches());
  const double d = static_cast<double>(o.hidden_size);
  const double mlp = static_cast<double>(o.intermediate_size);
  const double patch = static_cast<double>(o.num_channels * o.patch_size * o.patch_size);
  const double per_layer = 2.0 * n * (4.0 * d * d + 2.0 * d * mlp) + 4.0 * n * n * d;
  return 2.0 * n * patch * d + static_cast<double>(o.num_hidden_layers) * per_layer;
}

}  // namespace omnidp::models::vision

#pragma once
// FLOPs of the SigLIP vision tower's forward (docs/performance.md, "MFU"): 2 per multiply-add
// of the patch embedding and of every matrix multiplication (projections, MLP, attention over
// all n x n pairs); norms, activations and the pooling head (unused for last_hidden_state) are
// not counted. A plain function, thread-safe.

#include "omnidp/models/vision/siglip.hpp"

namespace omnidp::models::vision {

// n = num_patches() tokens, d = hidden_size, I = intermediate_size, p = patch_size:
// 2 n (channels p^2) d + num_hidden_layers x [2n(4d^2 + 2dI) + 4 n^2 d].
[[nodiscard]] double siglip_vision_flops(const SiglipVisionOptions& options);

}  // namespace omnidp::models::vision

#pragma once
// FLOPs of the SigLIP and CLIP vision towers' forwards (docs/performance.md, "MFU"): 2 per
// multiply-add of the patch embedding and of every matrix multiplication (projections, MLP,
// attention over all n x n pairs); norms, activations and the pooling head (unused for
// last_hidden_state) are not counted. A plain function, thread-safe.

#include "omnidp/models/vision/siglip.hpp"

namespace omnidp::models::vision {

// n = num_patches() tokens, d = hidden_size, I = intermediate_size, p = patch_size:
// 2 n (channels p^2) d + num_hidden_layers x [2n(4d^2 + 2dI) + 4 n^2 d].
[[nodiscard]] double siglip_vision_flops(const SiglipVisionOptions& options);

// CLIP's hidden_states[-2] (vision/clip.hpp): the same count with the layers over n =
// num_patches() + 1 tokens (the class token) and num_hidden_layers - 1 of them (the last one is
// not run).
[[nodiscard]] double clip_vision_flops(const SiglipVisionOptions& options);

}  // namespace omnidp::models::vision

#pragma once
// The last step of every pipeline: decoded frames in [0, 1] -> the uint8 Video the worker
// hashes and stores. The quantisation runs on the frames' device, so only the bytes cross to
// the host (a quarter of the float32 frames). Pure function; thread-safe.

#include <torch/torch.h>

#include "omnidp/common/image.hpp"
#include "omnidp/common/video.hpp"

namespace omnidp::models {

// frames [F, H, W, 3] or [1, F, H, W, 3], floating point in [0, 1], any device ->
// Video{round(255 x) as uint8} (round half to even, as torch.round). Throws ModelError for
// another shape or dtype, and for a NaN or infinity (which no uint8 level stands for).
[[nodiscard]] Video video_from_frames(const torch::Tensor& frames);

// pixels [H, W, 3] holding 0..255 in any dtype (a fixture's image_rgb_uint8) -> RgbImage,
// rounded and clamped to uint8. Throws ModelError for another shape.
[[nodiscard]] RgbImage image_from_pixels(const torch::Tensor& pixels);

}  // namespace omnidp::models

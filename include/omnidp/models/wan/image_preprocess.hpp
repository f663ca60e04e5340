#pragma once
// The I2V conditioning image as Diffusers prepares it: VideoProcessor.preprocess of a PIL RGB
// image (resize_mode "default": a stretch to the target size with PIL's Lanczos filter, no
// crop; nothing happens at the same size), then x / 255 * 2 - 1.
// Thread-safe (pure functions).

#include <torch/torch.h>

#include "omnidp/common/image.hpp"

namespace omnidp::models::wan {

// PIL Image.resize((width, height), Image.LANCZOS) of an 8-bit RGB image, bit-exact:
// resize_rgb(..., ResampleFilter::lanczos, ResizeConvention::pillow) (common/image_resize.hpp).
// Throws InputError when a size is not positive.
[[nodiscard]] RgbImage pil_resize_lanczos(const RgbImage& image, int width, int height);

// [1, 3, height, width] float32 on the CPU in [-1, 1].
[[nodiscard]] torch::Tensor preprocess_image(const RgbImage& image, int height, int width);

}  // namespace omnidp::models::wan

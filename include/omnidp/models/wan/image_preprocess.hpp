#pragma once
// The I2V conditioning image as Diffusers prepares it: VideoProcessor.preprocess of a PIL RGB
// image (resize_mode "default": a stretch to the target size with PIL's Lanczos filter, no
// crop; nothing happens at the same size), then x / 255 * 2 - 1.
// Thread-safe (pure functions).

#include <torch/torch.h>

#include "omnidp/common/image.hpp"

namespace omnidp::models::wan {

// PIL Image.resize((width, height), Image.LANCZOS) of an 8-bit RGB image, bit-exact: Pillow's
// two-pass separable resampler (libImaging/Resample.c): support 3 x the downscale factor,
// double coefficients normalised per output pixel, converted to 22-bit fixed point, horizontal
// pass first over the rows the vertical pass needs, rounding and clipping as Pillow does.
// Throws InputError when a size is not positive.
[[nodiscard]] RgbImage pil_resize_lanczos(const RgbImage& image, int width, int height);

// [1, 3, height, width] float32 on the CPU in [-1, 1].
[[nodiscard]] torch::Tensor preprocess_image(const RgbImage& image, int height, int width);

}  // namespace omnidp::models::wan

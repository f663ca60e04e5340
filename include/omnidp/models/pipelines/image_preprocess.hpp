#pragma once
// The conditioning image of an image-to-video request as Diffusers prepares it, for every
// pipeline: a PIL Lanczos resize (a stretch for Wan's VideoProcessor, resize_mode "default";
// cover-and-centre-crop for HunyuanVideo-1.5's VaeImageProcessor, resize_mode "crop"), then
// x / 255 * 2 - 1 as a [1, 3, H, W] float32 tensor on the CPU.
// Thread-safe (pure functions).

#include <torch/torch.h>

#include "omnidp/common/image.hpp"

namespace omnidp::models {

// PIL Image.resize((width, height), Image.LANCZOS) of an 8-bit RGB image, bit-exact:
// resize_rgb(..., ResampleFilter::lanczos, ResizeConvention::pillow) (common/image_resize.hpp).
// Throws InputError when a size is not positive.
[[nodiscard]] RgbImage pil_resize_lanczos(const RgbImage& image, int width, int height);

// VaeImageProcessor.resize(image, height, width, resize_mode="crop"): PIL Lanczos resize so the
// image covers width x height keeping its aspect ratio (the other side image.w * height //
// image.h or image.h * width // image.w), pasted centred on a black canvas (the excess cropped;
// offsets width // 2 - w // 2 as Python computes them).
[[nodiscard]] RgbImage resize_and_crop(const RgbImage& image, int width, int height);

// [1, 3, H, W] float32 on the CPU in [-1, 1]: numpy's astype(float32) / 255.0, then torch's
// 2 * x - 1 (all float32; VaeImageProcessor.preprocess).
[[nodiscard]] torch::Tensor image_to_tensor(const RgbImage& image);

// Wan's VideoProcessor.preprocess (resize_mode "default": a stretch, nothing happens at the
// same size): image_to_tensor(pil_resize_lanczos(image, width, height)).
[[nodiscard]] torch::Tensor preprocess_image(const RgbImage& image, int height, int width);

}  // namespace omnidp::models

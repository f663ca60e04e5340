#pragma once
// Antialiased separable resizing of 8-bit RGB images, bit-exact with the two resamplers that
// the reference image processors run (docs/models.md, "Image resizing"):
//   - ResizeConvention::pillow: PIL Image.resize (libImaging/Resample.c): filter support
//     scaled by the downscale factor, double coefficients normalised per output pixel and
//     converted to 22-bit fixed point, horizontal pass first, each pass rounded and clipped to
//     uint8. Diffusers' VideoProcessor and transformers' PIL-backend image processors.
//   - ResizeConvention::torch: torch.nn.functional.interpolate(uint8, antialias=True) on the
//     CPU, which torchvision's resize of a uint8 tensor runs (transformers' torchvision-backend
//     image processors, e.g. SiglipImageProcessor in transformers 5): the same taps, weights
//     rounded to int16 with a per-axis precision chosen from the largest weight, Keys' cubic
//     written as PyTorch evaluates it.
// Thread-safe (pure functions).

#include "omnidp/common/image.hpp"

namespace omnidp {

enum class ResampleFilter { bilinear, bicubic, lanczos };  // Lanczos: pillow only
enum class ResizeConvention { pillow, torch };

// PIL's resample codes (Image.Resampling): 2 bilinear, 3 bicubic, 1 lanczos. Throws
// std::invalid_argument for the others (0 nearest, 4 box, 5 hamming), which are not implemented.
[[nodiscard]] ResampleFilter resample_filter_from_pil(int code);
[[nodiscard]] const char* to_string(ResampleFilter filter) noexcept;

// `image` resized to width x height. Nothing is resampled along an axis whose size is
// unchanged (same size: a copy). Throws InputError (file "<image>") when a size is not
// positive or the filter is not available in the convention.
[[nodiscard]] RgbImage resize_rgb(const RgbImage& image, int width, int height,
                                  ResampleFilter filter, ResizeConvention convention);

}  // namespace omnidp

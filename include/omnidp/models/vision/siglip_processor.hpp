#pragma once
// SiglipImageProcessor (transformers) as the image-to-video pipelines call it on one RGB
// image: resize to size {height, width} with the configured filter, rescale by
// rescale_factor, normalise with image_mean / image_std, channels first: pixel_values
// [1, 3, height, width] float32 on the CPU.
// Two conventions, bit-exact each (docs/models.md, "SigLIP image processor"):
//   - torch (transformers >= 5 `SiglipImageProcessor`, and `SiglipImageProcessorFast`): the
//     uint8 image resized by torchvision (ResizeConvention::torch), then rescale and
//     normalise fused as (x - mean/rescale_factor) / (std/rescale_factor) in float32;
//   - pillow (`SiglipImageProcessorPil`, and transformers 4's `SiglipImageProcessor`): PIL's
//     resize, x * rescale_factor in float64 rounded to float32, then (x - mean) / std in float32.
// The image is already RGB (decode_image_rgb converts as PIL's convert("RGB") does), so
// do_convert_rgb has nothing left to do. Thread-safe (pure functions).

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <array>
#include <filesystem>
#include <string>

#include "omnidp/common/image.hpp"
#include "omnidp/common/image_resize.hpp"

namespace omnidp::models::vision {

struct SiglipImageProcessorOptions {
  bool do_resize = true;
  int height = 224;
  int width = 224;
  ResampleFilter resample = ResampleFilter::bicubic;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  std::array<double, 3> image_mean{0.5, 0.5, 0.5};
  std::array<double, 3> image_std{0.5, 0.5, 0.5};
  ResizeConvention convention = ResizeConvention::torch;

  // From a preprocessor_config.json. `image_processor_type` chooses the convention:
  // SiglipImageProcessor / SiglipImageProcessorFast -> torch, SiglipImageProcessorPil ->
  // pillow (absent: torch). `size` must be {height, width}; `resample` a PIL code of
  // common/image_resize.hpp. Other keys keep transformers' defaults. Throws WeightsError naming
  // `origin` and the key for a missing, mistyped or unsupported value.
  [[nodiscard]] static SiglipImageProcessorOptions from_json(const nlohmann::json& config,
                                                             const std::string& origin);
};

// `path`: a preprocessor_config.json, or the folder holding one (a snapshot's feature_extractor/).
[[nodiscard]] SiglipImageProcessorOptions load_siglip_image_processor(const std::filesystem::path& path);

// pixel_values [1, 3, H, W] float32 on the CPU (H, W: the resize target, or the image's size
// without do_resize).
[[nodiscard]] torch::Tensor siglip_preprocess(const RgbImage& image,
                                              const SiglipImageProcessorOptions& options);

}  // namespace omnidp::models::vision

#pragma once
// HunyuanVideo-1.5's output size for an image-to-video request: the reference pipeline picks
// it from the image's aspect ratio and the transformer's `target_size`
// (HunyuanVideo15ImageProcessor.calculate_default_height_width; docs/models.md). Torch-free:
// the manifest reader on rank 0 resolves sizes with it before any model is loaded.
// Thread-safe (pure functions).

#include <vector>

namespace omnidp::models {

struct FrameSize {
  int height = 0;
  int width = 0;
  friend bool operator==(const FrameSize&, const FrameSize&) = default;
};

// The reference's generate_crop_size_list(base_size = target_size, patch_size = patch,
// max_ratio = 4) in its order: with n = round((target_size / patch)^2) patches, every
// (a, b) patch grid walked from (n, 1) with a * b <= n and max(a, b) / min(a, b) <= 4, as
// {height = a * patch, width = b * patch}. Throws std::invalid_argument unless both are > 0.
[[nodiscard]] std::vector<FrameSize> hv15_crop_sizes(int target_size, int patch);

// The bucket of an image_height x image_width image: among the crop sizes whose ratio
// height / width (rounded to 5 decimals as Python's round does) is >= the image's for a
// landscape image (h / w < 1), <= it otherwise, the first of the closest ratio. Throws
// std::invalid_argument for non-positive sizes or an empty bucket list.
[[nodiscard]] FrameSize hv15_bucket_size(int image_height, int image_width, int target_size,
                                         int patch);

// The Wan image-to-video size (diffusers' max_area recipe for WanImageToVideoPipeline): the
// image's aspect ratio r = height / width at `area` pixels, height round(sqrt(area * r)) and
// width round(sqrt(area / r)) (halves to even, as Python's round), each rounded down to a
// multiple of `multiple` and at least one multiple. Throws std::invalid_argument unless every
// input is > 0.
[[nodiscard]] FrameSize area_size(int image_height, int image_width, double area, int multiple);

}  // namespace omnidp::models

#pragma once
// The narrow interface through which an image-to-video pipeline gets the semantic tokens of
// its conditioning image (HunyuanVideo-1.5: SigLIP so400m's last_hidden_state, 729 x 1152).
// An implementation owns its model and preprocessing (e.g. SiglipImageProcessor: bicubic
// resize to the model's square size, rescale, normalise); the pipeline hands it the image as
// the reference hands it to the feature extractor (HunyuanVideo-1.5: already resized and
// cropped to the output size). Called from the pipeline's thread only.

#include <torch/torch.h>

#include "omnidp/common/image.hpp"

namespace omnidp::models {

class ImageEncoder {
 public:
  virtual ~ImageEncoder() = default;
  ImageEncoder() = default;
  ImageEncoder(const ImageEncoder&) = delete;
  ImageEncoder& operator=(const ImageEncoder&) = delete;

  // [1, tokens, width] (any float dtype, any device) for an 8-bit RGB image. Throws
  // ModelError / InputError.
  [[nodiscard]] virtual torch::Tensor encode(const RgbImage& image) = 0;
};

}  // namespace omnidp::models

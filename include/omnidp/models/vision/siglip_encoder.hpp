#pragma once
// SiglipImageEncoder: the ImageEncoder of HunyuanVideo-1.5 image-to-video, the reference's
// `feature_extractor` (SiglipImageProcessor) then `image_encoder` (SiglipVisionModel,
// last_hidden_state [1, 729, 1152] for so400m-patch14-384). Owns both; encode() from one thread.

#include <cstdint>
#include <filesystem>
#include <memory>

#include "omnidp/models/layers/image_encoder.hpp"
#include "omnidp/models/vision/siglip.hpp"
#include "omnidp/models/vision/siglip_processor.hpp"

namespace omnidp::models::vision {

class SiglipImageEncoder final : public ImageEncoder {
 public:
  SiglipImageEncoder(SiglipVisionModel model, SiglipImageProcessorOptions processor);
  // last_hidden_state of the processed image, in the model's dtype on its device.
  [[nodiscard]] torch::Tensor encode(const RgbImage& image) override;
  // siglip_vision_flops of the model (vision/flops.hpp): one encode()'s FLOPs.
  [[nodiscard]] double encode_flops() const;
  // The tokens encode() returns (num_patches()).
  [[nodiscard]] std::int64_t tokens() const;

 private:
  SiglipVisionModel model_;
  SiglipImageProcessorOptions processor_;
};

// `encoder_dir`: a snapshot's image_encoder/; `processor`: its feature_extractor/ (or a
// preprocessor_config.json). Throws WeightsError / ModelError naming the folder and the file.
[[nodiscard]] std::unique_ptr<ImageEncoder> load_siglip_image_encoder(
    const std::filesystem::path& encoder_dir, const std::filesystem::path& processor,
    torch::ScalarType dtype, torch::Device device);

}  // namespace omnidp::models::vision

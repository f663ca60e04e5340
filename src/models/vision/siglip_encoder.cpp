#include "omnidp/models/vision/siglip_encoder.hpp"

#include <utility>

namespace omnidp::models::vision {

SiglipImageEncoder::SiglipImageEncoder(SiglipVisionModel model, SiglipImageProcessorOptions processor)
    : model_(std::move(model)), processor_(std::move(processor)) {}

torch::Tensor SiglipImageEncoder::encode(const RgbImage& image) {
  torch::NoGradGuard no_grad;
  const auto pixels = siglip_preprocess(image, processor_).to(model_->device(), model_->dtype());
  return model_->forward(pixels);
}

std::unique_ptr<ImageEncoder> load_siglip_image_encoder(const std::filesystem::path& encoder_dir,
                                                        const std::filesystem::path& processor,
                                                        torch::ScalarType dtype,
                                                        torch::Device device) {
  auto options = load_siglip_image_processor(processor);
  return std::make_unique<SiglipImageEncoder>(load_siglip_vision(encoder_dir, dtype, device),
                                              std::move(options));
}

}  // namespace omnidp::models::vision

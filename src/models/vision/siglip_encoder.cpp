#include "omnidp/models/vision/siglip_encoder.hpp"

#include <utility>

#include "omnidp/models/vision/flops.hpp"

namespace omnidp::models::vision {

double SiglipImageEncoder::encode_flops() const { return siglip_vision_flops(model_->options()); }

std::int64_t SiglipImageEncoder::tokens() const { return model_->options().num_patches(); }

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

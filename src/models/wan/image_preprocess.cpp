#include "omnidp/models/wan/image_preprocess.hpp"

#include "omnidp/common/image_resize.hpp"

namespace omnidp::models::wan {

RgbImage pil_resize_lanczos(const RgbImage& image, int width, int height) {
  return resize_rgb(image, width, height, ResampleFilter::lanczos, ResizeConvention::pillow);
}

torch::Tensor preprocess_image(const RgbImage& image, int height, int width) {
  const RgbImage sized = pil_resize_lanczos(image, width, height);
  auto bytes = torch::from_blob(const_cast<std::uint8_t*>(sized.data.data()),
                                {sized.height, sized.width, 3}, torch::kUInt8);
  // numpy: astype(float32) / 255.0; then torch: 2 * x - 1 (all float32).
  auto x = bytes.to(torch::kFloat32) / 255.0;
  x = 2.0 * x - 1.0;
  return x.permute({2, 0, 1}).unsqueeze(0).contiguous();
}

}  // namespace omnidp::models::wan

#include "omnidp/models/pipelines/image_preprocess.hpp"

#include <cstring>

#include "omnidp/common/image_resize.hpp"

namespace omnidp::models {

RgbImage pil_resize_lanczos(const RgbImage& image, int width, int height) {
  return resize_rgb(image, width, height, ResampleFilter::lanczos, ResizeConvention::pillow);
}

RgbImage resize_and_crop(const RgbImage& image, int width, int height) {
  const double ratio = static_cast<double>(width) / height;
  const double src_ratio = static_cast<double>(image.width) / image.height;
  const int src_w = ratio > src_ratio ? width : image.width * height / image.height;
  const int src_h = ratio <= src_ratio ? height : image.height * width / image.width;
  const RgbImage resized = pil_resize_lanczos(image, src_w, src_h);
  RgbImage out;
  out.width = width;
  out.height = height;
  out.data.assign(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3U, 0);
  // PIL floor division of possibly negative offsets.
  auto floor_div = [](int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  const int ox = floor_div(width, 2) - floor_div(src_w, 2);
  const int oy = floor_div(height, 2) - floor_div(src_h, 2);
  for (int y = 0; y < src_h; ++y) {
    const int ty = y + oy;
    if (ty < 0 || ty >= height) continue;
    for (int x = 0; x < src_w; ++x) {
      const int tx = x + ox;
      if (tx < 0 || tx >= width) continue;
      const auto* src = &resized.data[(static_cast<std::size_t>(y) * src_w + x) * 3U];
      auto* dst = &out.data[(static_cast<std::size_t>(ty) * width + tx) * 3U];
      std::memcpy(dst, src, 3);
    }
  }
  return out;
}

torch::Tensor image_to_tensor(const RgbImage& image) {
  auto bytes = torch::from_blob(const_cast<std::uint8_t*>(image.data.data()),
                                {image.height, image.width, 3}, torch::kUInt8);
  auto x = bytes.to(torch::kFloat32) / 255.0;
  x = 2.0 * x - 1.0;
  return x.permute({2, 0, 1}).unsqueeze(0).contiguous();
}

torch::Tensor preprocess_image(const RgbImage& image, int height, int width) {
  return image_to_tensor(pil_resize_lanczos(image, width, height));
}

}  // namespace omnidp::models

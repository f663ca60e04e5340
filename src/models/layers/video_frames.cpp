#include "omnidp/models/layers/video_frames.hpp"

#include "omnidp/common/error.hpp"

namespace omnidp::models {

Video video_from_frames(const torch::Tensor& frames) {
  const auto f = frames.dim() == 5 && frames.size(0) == 1 ? frames[0] : frames;
  if (f.dim() != 4 || f.size(3) != 3 || !f.is_floating_point()) {
    throw ModelError("video frames must be floating point [F, H, W, 3] in [0, 1]");
  }
  if (!torch::isfinite(f).all().item<bool>()) {
    throw ModelError(
        "the decoded video has NaN or infinite values (no uint8 level stands for them)");
  }
  const auto bytes = (f.to(torch::kFloat32) * 255).round().to(torch::kUInt8).contiguous().cpu();
  Video video;
  video.frames = static_cast<int>(bytes.size(0));
  video.height = static_cast<int>(bytes.size(1));
  video.width = static_cast<int>(bytes.size(2));
  video.data.assign(bytes.data_ptr<std::uint8_t>(), bytes.data_ptr<std::uint8_t>() + bytes.numel());
  video.check();
  return video;
}

RgbImage image_from_pixels(const torch::Tensor& pixels) {
  if (pixels.dim() != 3 || pixels.size(2) != 3) throw ModelError("image pixels must be [H, W, 3]");
  const auto bytes = pixels.round().clamp(0, 255).to(torch::kUInt8).contiguous().cpu();
  RgbImage image;
  image.height = static_cast<int>(bytes.size(0));
  image.width = static_cast<int>(bytes.size(1));
  image.data.assign(bytes.data_ptr<std::uint8_t>(), bytes.data_ptr<std::uint8_t>() + bytes.numel());
  return image;
}

}  // namespace omnidp::models

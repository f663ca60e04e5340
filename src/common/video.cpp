#include "omnidp/common/video.hpp"

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"

namespace omnidp {

void Video::check() const {
  if (frames <= 0 || height <= 0 || width <= 0) {
    throw RuntimeError("video has a non-positive dimension: " + std::to_string(frames) + "x" +
                       std::to_string(height) + "x" + std::to_string(width));
  }
  if (data.size() != byte_size()) {
    throw RuntimeError("video holds " + std::to_string(data.size()) + " bytes, expected " +
                       std::to_string(byte_size()));
  }
}

std::string video_sha256(const Video& video) { return sha256_hex(std::span(video.data)); }

}  // namespace omnidp

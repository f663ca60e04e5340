#include "omnidp/common/video.hpp"

#include <fmt/format.h>

#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"

namespace omnidp {

void Video::check() const {
  if (frames <= 0 || height <= 0 || width <= 0) {
    throw RuntimeError(
        fmt::format("video has a non-positive dimension: {}x{}x{}", frames, height, width));
  }
  if (data.size() != byte_size()) {
    throw RuntimeError(fmt::format("video holds {} bytes, expected {}", data.size(), byte_size()));
  }
}

std::string video_sha256(const Video& video) { return sha256_hex(std::span(video.data)); }

}  // namespace omnidp

#pragma once
// A generated video as plain bytes: uint8 [frames, height, width, 3] in C order (RGB).
// The hand-off type between a pipeline, the worker and the writer; torch-free on purpose.
// Move-only in spirit (copies are allowed but expensive): pass by value and std::move.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace omnidp {

struct Video {
  int frames = 0;
  int height = 0;
  int width = 0;
  std::vector<std::uint8_t> data;  // frames * height * width * 3 bytes

  [[nodiscard]] std::size_t byte_size() const noexcept {
    return static_cast<std::size_t>(frames) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width) * 3U;
  }
  // Throws RuntimeError if data.size() != byte_size() or a dimension is not positive.
  void check() const;
};

// SHA-256 (hex) of the video's bytes in [F,H,W,3] C order: the `video_sha256` of docs/results.md.
[[nodiscard]] std::string video_sha256(const Video& video);

}  // namespace omnidp

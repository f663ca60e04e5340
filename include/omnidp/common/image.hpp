#pragma once
// Reading the conditioning images of i2v requests: PNG (libpng) and JPEG (libjpeg), the two
// formats accepted in manifests. Every failure is an InputError naming the file (a per-request
// defect): missing, unreadable, not a PNG/JPEG, truncated or corrupt, or over the pixel limit.
// The libraries' error handlers are replaced, so nothing aborts the process.
// Thread-safe: no shared state.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace omnidp {

enum class ImageFormat { png, jpeg };
[[nodiscard]] const char* to_string(ImageFormat format) noexcept;

struct ImageInfo {
  int width = 0;
  int height = 0;
  ImageFormat format = ImageFormat::png;
};

// 8-bit RGB pixels, [height, width, 3] in C order.
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> data;
};

// Reads only the header (PNG signature + IHDR, JPEG markers up to the start of scan).
[[nodiscard]] ImageInfo probe_image(const std::filesystem::path& path);

// "" when the longer side of `info` is at most `max_aspect` times the shorter, else the reason
// ("image is 1x16777216, an aspect ratio of 16777216:1, over the limit of 32:1
// (input.max_image_aspect)"). The work of preparing an image follows its shape, not its pixels
// (a resize to a shortest edge of 224 makes a 1 x 16M image 224 x 3.7G; issue 52, class 6), so
// the manifest reader refuses extreme shapes from the header, before decoding.
[[nodiscard]] std::string image_aspect_problem(const ImageInfo& info, double max_aspect);

// Decodes to 8-bit RGB the way PIL's Image.convert("RGB") does: palette and grey expanded,
// alpha dropped (not composited), 16-bit samples truncated to their high byte. Refuses before
// decoding when width * height > max_pixels. A truncated or corrupt file is an error (libjpeg's
// "premature end" warnings included).
//
// `expected_sha256` (hex, the image_sha256 its request's input key was computed from), when not
// empty: the file is read once into memory, those bytes are hashed and decoded, and a hash that
// differs is an InputError ("the image changed after its request was validated"): a file
// overwritten during a run never makes a video whose row carries the old image's input key.
[[nodiscard]] RgbImage decode_image_rgb(const std::filesystem::path& path, std::uint64_t max_pixels,
                                        std::string_view expected_sha256 = {});

}  // namespace omnidp

#pragma once
// Test images: an RGB PNG written from its bytes (row-major, 3 bytes a pixel), and the
// gradient most tests use. Link PNG::PNG.

#include <png.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace omnidp::test {

// width * height * 3 bytes: byte i is (i * step) % 251.
inline std::vector<std::uint8_t> gradient_rgb(int width, int height, std::size_t step = 37) {
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) *
                                   static_cast<std::size_t>(height) * 3);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>((i * step) % 251);
  return pixels;
}

// True when the file was written.
[[nodiscard]] inline bool write_rgb_png(const std::filesystem::path& file, int width, int height,
                                        const std::vector<std::uint8_t>& rgb) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  return png_image_write_to_file(&image, file.c_str(), 0, rgb.data(), 0, nullptr) != 0;
}

}  // namespace omnidp::test

#pragma once
// Test images: a PNG written from its bytes, a PNG or JPEG header without image data, and
// the gradient most tests use. Link PNG::PNG.

#include <png.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
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

// A PNG of `pixels` (row-major, in libpng's simplified-API `format`, e.g. PNG_FORMAT_RGB);
// true when the file was written.
[[nodiscard]] inline bool write_png(const std::filesystem::path& file, int width, int height,
                                    std::uint32_t format, const std::vector<std::uint8_t>& pixels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = format;
  return png_image_write_to_file(&image, file.c_str(), 0, pixels.data(), 0, nullptr) != 0;
}

// True when the file was written.
[[nodiscard]] inline bool write_rgb_png(const std::filesystem::path& file, int width, int height,
                                        const std::vector<std::uint8_t>& rgb) {
  return write_png(file, width, height, PNG_FORMAT_RGB, rgb);
}

// Only the PNG signature and an IHDR chunk claiming an 8-bit RGB width x height, no image
// data; true when the file was written.
[[nodiscard]] inline bool write_png_header(const std::filesystem::path& file, png_uint_32 width,
                                           png_uint_32 height) {
  struct Closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> out(std::fopen(file.c_str(), "wb"));
  if (!out) return false;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, out.get());
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);  // libpng's default: 1,000,000 a side
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_flush(png);
  png_destroy_write_struct(&png, &info);
  return true;
}

// Only a JPEG's markers up to its scan: SOI, a baseline SOF0 claiming an 8-bit 3-component
// width x height (each at most 65535), SOS; no tables, no image data. Enough for a header
// probe (jpeg_read_header); true when the file was written.
[[nodiscard]] inline bool write_jpeg_header(const std::filesystem::path& file, unsigned width,
                                            unsigned height) {
  const auto hi = [](unsigned v) { return static_cast<std::uint8_t>((v >> 8) & 0xFF); };
  const auto lo = [](unsigned v) { return static_cast<std::uint8_t>(v & 0xFF); };
  const std::vector<std::uint8_t> bytes{
      0xFF, 0xD8,                                                                        // SOI
      0xFF, 0xC0, 0x00, 0x11, 0x08, hi(height), lo(height), hi(width), lo(width), 0x03,  // SOF0
      0x01, 0x11, 0x00, 0x02, 0x11, 0x00,       0x03,       0x11,      0x00,  //  components
      0xFF, 0xDA, 0x00, 0x0C, 0x03, 0x01,       0x00,       0x02,      0x11,      0x03,
      0x11,  // SOS
      0x00, 0x3F, 0x00};
  std::FILE* out = std::fopen(file.c_str(), "wb");
  if (out == nullptr) return false;
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
  return std::fclose(out) == 0 && written;
}

}  // namespace omnidp::test

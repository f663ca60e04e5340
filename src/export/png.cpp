#include "omnidp/export/png.hpp"

#include <fmt/format.h>
#include <png.h>

#include <string>

#include "omnidp/common/error.hpp"

namespace omnidp::video_export {

namespace {

void check_sizes(std::span<const std::uint8_t> rgb, int width, int height, const std::string& what) {
  if (width <= 0 || height <= 0 ||
      rgb.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3U) {
    throw InputError(
        what, fmt::format("cannot write a PNG of {}x{} from {} bytes", width, height, rgb.size()));
  }
}

}  // namespace

std::vector<std::uint8_t> encode_png(std::span<const std::uint8_t> rgb, int width, int height,
                                     const std::string& what) {
  check_sizes(rgb, width, height, what);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  int ok = png_image_write_to_memory(&image, nullptr, &size, 0, rgb.data(), width * 3, nullptr);
  std::vector<std::uint8_t> out;
  if (ok != 0) {
    out.resize(size);
    ok = png_image_write_to_memory(&image, out.data(), &size, 0, rgb.data(), width * 3, nullptr);
    out.resize(size);
  }
  const std::string message = image.message;
  png_image_free(&image);
  if (ok == 0) throw IoError(what, "cannot encode PNG: " + message);
  return out;
}

void write_png(std::span<const std::uint8_t> rgb, int width, int height,
               const std::filesystem::path& path) {
  check_sizes(rgb, width, height, path.string());
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  const int ok = png_image_write_to_file(&image, path.c_str(), 0, rgb.data(), width * 3, nullptr);
  const std::string message = image.message;
  png_image_free(&image);
  if (ok == 0) throw IoError(path.string(), "cannot write PNG: " + message);
}

}  // namespace omnidp::video_export

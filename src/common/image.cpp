#include "omnidp/common/image.hpp"

// libpng and libjpeg report errors through callbacks that must not return. Both callbacks
// longjmp back into small functions (read_*_step below) that hold no C++ objects with
// destructors; the C++ code around them turns a failed step into an InputError.

#include <fmt/format.h>
#include <jpeglib.h>
#include <png.h>

#include <jerror.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/sha256.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

[[noreturn]] void fail(const fs::path& path, const std::string& message) {
  throw InputError(path.string(), message);
}

File open_image(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) fail(path, "image not found");
  // Checked before the open: opening a FIFO for reading blocks until a writer comes.
  if (!fs::is_regular_file(status))
    fail(path, std::string("is ") + file_kind(status.type()) + ", not an image");
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) fail(path, std::string("cannot open image: ") + std::strerror(errno));
  return file;
}

// Format from the leading bytes; the file position is restored to the start.
ImageFormat sniff_format(std::FILE* file, const fs::path& path) {
  std::array<unsigned char, 8> head{};
  const std::size_t n = std::fread(head.data(), 1, head.size(), file);
  if (std::ferror(file) != 0) fail(path, "cannot read image");
  std::rewind(file);
  if (n == 0) fail(path, "empty file, not an image");
  if (n == head.size() && png_sig_cmp(head.data(), 0, head.size()) == 0) return ImageFormat::png;
  if (n >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF) return ImageFormat::jpeg;
  fail(path, "not a PNG or JPEG image");
}

void check_pixels(const fs::path& path, const ImageInfo& info, std::uint64_t max_pixels) {
  const auto pixels =
      static_cast<std::uint64_t>(info.width) * static_cast<std::uint64_t>(info.height);
  if (pixels > max_pixels) {
    fail(path, fmt::format("image is {}x{} = {} pixels, over the limit of {} "
                           "(input.max_image_pixels); not decoded",
                           info.width, info.height, pixels, max_pixels));
  }
}

}  // namespace

std::string image_aspect_problem(const ImageInfo& info, double max_aspect) {
  const auto longer = static_cast<double>(std::max(info.width, info.height));
  const auto shorter = static_cast<double>(std::min(info.width, info.height));
  if (shorter <= 0.0 || longer <= max_aspect * shorter) return {};
  std::string ratio = fmt::format("{:.1f}", longer / shorter);
  if (ratio.ends_with(".0")) ratio.resize(ratio.size() - 2);
  return fmt::format(
      "image is {}x{}, an aspect ratio of {}:1, over the limit of {}:1 (input.max_image_aspect)",
      info.width, info.height, ratio, shortest(max_aspect));
}

namespace {

// ---------------------------------------------------------------------------------- PNG ---

struct PngDecoder {
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::array<char, 256> message{};

  PngDecoder() = default;
  PngDecoder(const PngDecoder&) = delete;
  PngDecoder& operator=(const PngDecoder&) = delete;
  ~PngDecoder() { png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr); }
};

void png_on_error(png_structp png, png_const_charp message) {
  auto* self = static_cast<PngDecoder*>(png_get_error_ptr(png));
  std::snprintf(self->message.data(), self->message.size(), "%s", message);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp /*png*/, png_const_charp /*message*/) {
  // Benign (e.g. an iCCP profile remark): ignored, like PIL does.
}

// Reads the header and sets the transforms to 8-bit RGB. False on a libpng error.
bool read_png_header_step(PngDecoder& d, std::FILE* file) {
  if (setjmp(png_jmpbuf(d.png)) != 0) return false;
  png_init_io(d.png, file);
  png_read_info(d.png, d.info);
  png_set_strip_16(d.png);
  png_set_packing(d.png);
  png_set_palette_to_rgb(d.png);
  png_set_expand_gray_1_2_4_to_8(d.png);
  png_set_gray_to_rgb(d.png);
  png_set_strip_alpha(d.png);
  png_set_interlace_handling(d.png);
  png_read_update_info(d.png, d.info);
  return true;
}

bool read_png_pixels_step(PngDecoder& d, png_bytepp rows) {
  if (setjmp(png_jmpbuf(d.png)) != 0) return false;
  png_read_image(d.png, rows);
  png_read_end(d.png, nullptr);
  return true;
}

std::uint32_t big_endian_u32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// The PNG header without libpng (which would read on to the first IDAT): the signature and
// the IHDR chunk that must follow it, CRC checked. The file position is restored.
ImageInfo probe_png(std::FILE* file, const fs::path& path) {
  std::array<unsigned char, 33> head{};  // signature 8, length 4, type 4, IHDR 13, CRC 4
  const std::size_t n = std::fread(head.data(), 1, head.size(), file);
  std::rewind(file);
  if (n < head.size()) fail(path, "invalid PNG header: the file ends inside the IHDR chunk");
  if (big_endian_u32(&head[8]) != 13 || std::memcmp(&head[12], "IHDR", 4) != 0) {
    fail(path, "invalid PNG header: the IHDR chunk does not follow the signature");
  }
  const auto crc = crc32(crc32(0L, Z_NULL, 0), &head[12], 17);
  if (crc != big_endian_u32(&head[29])) fail(path, "invalid PNG header: IHDR CRC mismatch");
  const std::uint32_t width = big_endian_u32(&head[16]);
  const std::uint32_t height = big_endian_u32(&head[20]);
  constexpr std::uint32_t kMax = 0x7FFFFFFFU;  // the PNG specification's limit
  if (width == 0 || height == 0 || width > kMax || height > kMax) {
    fail(path, fmt::format("invalid PNG header: bad size {}x{}", width, height));
  }
  return ImageInfo{static_cast<int>(width), static_cast<int>(height), ImageFormat::png};
}

RgbImage decode_png(std::FILE* file, const fs::path& path, std::uint64_t max_pixels) {
  const ImageInfo info = probe_png(file, path);
  check_pixels(path, info, max_pixels);
  PngDecoder d;
  d.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &d, png_on_error, png_on_warning);
  if (d.png == nullptr) fail(path, "png_create_read_struct failed");
  d.info = png_create_info_struct(d.png);
  if (d.info == nullptr) fail(path, "png_create_info_struct failed");
  // libpng's own per-dimension limit (default 10^6) must not pre-empt max_pixels.
  png_set_user_limits(d.png, 0x7FFFFFFFU, 0x7FFFFFFFU);
  if (!read_png_header_step(d, file)) {
    fail(path, std::string("truncated or corrupt PNG: ") + d.message.data());
  }
  const auto row_bytes = static_cast<std::size_t>(info.width) * 3U;
  if (png_get_channels(d.png, d.info) != 3 || png_get_rowbytes(d.png, d.info) != row_bytes) {
    fail(path, "unsupported PNG pixel layout");
  }
  RgbImage image{info.width, info.height, {}};
  image.data.resize(row_bytes * static_cast<std::size_t>(info.height));
  std::vector<png_bytep> rows(static_cast<std::size_t>(info.height));
  for (std::size_t y = 0; y < rows.size(); ++y) rows[y] = image.data.data() + y * row_bytes;
  if (!read_png_pixels_step(d, rows.data())) {
    fail(path, std::string("truncated or corrupt PNG: ") + d.message.data());
  }
  return image;
}

// --------------------------------------------------------------------------------- JPEG ---

struct JpegDecoder {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr errors{};
  std::jmp_buf jump{};
  std::array<char, JMSG_LENGTH_MAX> message{};
  bool premature_end = false;
  bool created = false;

  JpegDecoder() = default;
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;
  ~JpegDecoder() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* self = static_cast<JpegDecoder*>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, self->message.data());
  std::longjmp(self->jump, 1);
}

void jpeg_on_message(j_common_ptr cinfo, int level) {
  // level < 0: a warning about corrupt data. Only the end of the file arriving early (the
  // decoder would fill the rest with grey) counts as an error, as PIL's "truncated" does.
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    static_cast<JpegDecoder*>(cinfo->client_data)->premature_end = true;
  }
}

bool read_jpeg_header_step(JpegDecoder& d, std::FILE* file) {
  if (setjmp(d.jump) != 0) return false;
  jpeg_create_decompress(&d.cinfo);
  d.created = true;
  jpeg_stdio_src(&d.cinfo, file);
  jpeg_read_header(&d.cinfo, TRUE);
  return true;
}

bool read_jpeg_pixels_step(JpegDecoder& d, std::uint8_t* out, std::size_t row_bytes) {
  if (setjmp(d.jump) != 0) return false;
  d.cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d.cinfo);
  if (d.cinfo.output_components != 3 || d.cinfo.output_width * 3U != row_bytes) {
    std::snprintf(d.message.data(), d.message.size(), "unsupported JPEG output layout");
    return false;
  }
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    JSAMPROW row = out + static_cast<std::size_t>(d.cinfo.output_scanline) * row_bytes;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&d.cinfo);
  return true;
}

void jpeg_start(JpegDecoder& d, std::FILE* file, const fs::path& path, ImageInfo& info) {
  d.cinfo.err = jpeg_std_error(&d.errors);
  d.errors.error_exit = jpeg_on_error;
  d.errors.emit_message = jpeg_on_message;
  d.cinfo.client_data = &d;
  if (!read_jpeg_header_step(d, file)) {
    fail(path, std::string("invalid JPEG header: ") + d.message.data());
  }
  if (d.premature_end) fail(path, "truncated JPEG: the file ends inside its header");
  info.width = static_cast<int>(d.cinfo.image_width);
  info.height = static_cast<int>(d.cinfo.image_height);
  info.format = ImageFormat::jpeg;
}

RgbImage decode_jpeg(std::FILE* file, const fs::path& path, std::uint64_t max_pixels) {
  JpegDecoder d;
  ImageInfo info;
  jpeg_start(d, file, path, info);
  check_pixels(path, info, max_pixels);
  const auto row_bytes = static_cast<std::size_t>(info.width) * 3U;
  RgbImage image{info.width, info.height, {}};
  image.data.resize(row_bytes * static_cast<std::size_t>(info.height));
  if (!read_jpeg_pixels_step(d, image.data.data(), row_bytes)) {
    fail(path, std::string("corrupt JPEG: ") + d.message.data());
  }
  if (d.premature_end) fail(path, "truncated JPEG: the file ends before the image data does");
  return image;
}

}  // namespace

const char* to_string(ImageFormat format) noexcept {
  switch (format) {
    case ImageFormat::png: return "png";
    case ImageFormat::jpeg: return "jpeg";
  }
  return "unknown";
}

ImageInfo probe_image(const fs::path& path) {
  const File file = open_image(path);
  ImageInfo info;
  if (sniff_format(file.get(), path) == ImageFormat::png) {
    info = probe_png(file.get(), path);
  } else {
    JpegDecoder d;
    jpeg_start(d, file.get(), path, info);
  }
  return info;
}

RgbImage decode_image_rgb(const fs::path& path, std::uint64_t max_pixels,
                          std::string_view expected_sha256) {
  File file = open_image(path);
  std::vector<std::uint8_t> bytes;  // what is hashed is what is decoded (issue 39, class 10)
  if (!expected_sha256.empty()) {
    std::array<std::uint8_t, 1 << 16> block{};
    for (;;) {
      const std::size_t n = std::fread(block.data(), 1, block.size(), file.get());
      bytes.insert(bytes.end(), block.begin(), block.begin() + static_cast<std::ptrdiff_t>(n));
      if (n < block.size()) break;
    }
    if (std::ferror(file.get()) != 0)
      fail(path, std::string("cannot read image: ") + std::strerror(errno));
    const std::string actual = sha256_hex(std::span<const std::uint8_t>(bytes));
    if (actual != expected_sha256) {
      fail(path, "the image changed after its request was validated (its bytes hash to " +
                     actual.substr(0, 16) + "..., its input key was computed from " +
                     std::string(expected_sha256.substr(0, 16)) +
                     "...): not generated from an image its row would not describe; rerun to "
                     "validate the new image");
    }
    if (bytes.empty()) fail(path, "empty file, not an image");
    file.reset(fmemopen(bytes.data(), bytes.size(), "rb"));
    if (!file) fail(path, std::string("cannot read image: ") + std::strerror(errno));
  }
  if (sniff_format(file.get(), path) == ImageFormat::png) {
    return decode_png(file.get(), path, max_pixels);
  }
  return decode_jpeg(file.get(), path, max_pixels);
}

}  // namespace omnidp

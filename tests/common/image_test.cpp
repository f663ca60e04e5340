#include "omnidp/common/image.hpp"

#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "error_of.hpp"
#include "omnidp/common/error.hpp"
#include "omnidp/common/sha256.hpp"
#include "png_file.hpp"
#include "temp_dir.hpp"

namespace omnidp {
namespace {

namespace fs = std::filesystem;

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

// Pixels with structure (so compressed data is not tiny): a deterministic pseudo-random pattern.
std::vector<std::uint8_t> pattern(int width, int height, int channels) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(width * height * channels));
  std::uint32_t x = 12345;
  for (auto& b : out) {
    x = x * 1103515245U + 12345U;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  return out;
}

void write_png(const fs::path& path, int width, int height, std::uint32_t format,
               const std::vector<std::uint8_t>& pixels) {
  ASSERT_TRUE(omnidp::test::write_png(path, width, height, format, pixels)) << path;
}

// Only the signature and the IHDR chunk: a header claiming width x height, no image data.
void write_png_header_only(const fs::path& path, png_uint_32 width, png_uint_32 height) {
  ASSERT_TRUE(omnidp::test::write_png_header(path, width, height)) << path;
}

void write_jpeg(const fs::path& path, int width, int height, int components,
                const std::vector<std::uint8_t>& pixels, int quality) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
  ASSERT_TRUE(file);
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  jpeg_stdio_dest(&cinfo, file.get());
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = components;
  cinfo.in_color_space = components == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const auto stride = static_cast<std::size_t>(width * components);
  while (cinfo.next_scanline < cinfo.image_height) {
    auto* row = const_cast<JSAMPLE*>(pixels.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
}

void truncate_to(const fs::path& path, double fraction) {
  const auto size = fs::file_size(path);
  fs::resize_file(path, static_cast<std::uintmax_t>(static_cast<double>(size) * fraction));
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The message of the InputError `fn` throws ("" if it throws nothing).
std::string input_error_of(const std::function<void()>& fn) {
  return omnidp::test::error_of<InputError>(fn);
}

class ImageTest : public ::testing::Test {
 protected:
  omnidp::test::TempDir tmp_;
  fs::path dir_ = tmp_.path();
};

TEST_F(ImageTest, PngRgbProbeAndDecodeExact) {
  const auto path = dir_ / "rgb.png";
  const auto pixels = pattern(37, 21, 3);
  write_png(path, 37, 21, PNG_FORMAT_RGB, pixels);

  const ImageInfo info = probe_image(path);
  EXPECT_EQ(info.width, 37);
  EXPECT_EQ(info.height, 21);
  EXPECT_EQ(info.format, ImageFormat::png);
  EXPECT_STREQ(to_string(info.format), "png");

  const RgbImage image = decode_image_rgb(path, 37 * 21);
  EXPECT_EQ(image.width, 37);
  EXPECT_EQ(image.height, 21);
  EXPECT_EQ(image.data, pixels);
}

// Issue 39, class 10: an image overwritten between validation (its image_sha256, in the input
// key) and the worker's decode made a video whose row carried the old image's key. The bytes
// decoded are the bytes hashed; a hash other than the validated one fails the request.
TEST_F(ImageTest, TheDecodedBytesMustHashToTheValidatedHash) {
  const auto path = dir_ / "rgb.png";
  const auto pixels = pattern(37, 21, 3);
  write_png(path, 37, 21, PNG_FORMAT_RGB, pixels);
  const std::string validated = sha256_file_hex(path);
  EXPECT_EQ(decode_image_rgb(path, 37 * 21, validated).data, pixels);

  const auto other = pattern(21, 37, 3);
  write_png(path, 21, 37, PNG_FORMAT_RGB, other);  // overwritten during the run
  const std::string now = sha256_file_hex(path);
  EXPECT_EQ(
      input_error_of([&] { (void)decode_image_rgb(path, 37 * 21, validated); }),
      path.string() + ": the image changed after its request was validated (its bytes hash to " +
          now.substr(0, 16) + "..., its input key was computed from " + validated.substr(0, 16) +
          "...): not generated from an image its row would not describe; rerun to "
          "validate the new image");
  EXPECT_EQ(decode_image_rgb(path, 37 * 21, now).data, other);  // the same bytes decode alike
  EXPECT_EQ(decode_image_rgb(path, 37 * 21).data, other);       // no hash given: not checked
}

TEST_F(ImageTest, PngAlphaIsDroppedNotComposited) {
  const auto path = dir_ / "rgba.png";
  const auto rgba = pattern(8, 5, 4);
  write_png(path, 8, 5, PNG_FORMAT_RGBA, rgba);
  std::vector<std::uint8_t> expected;
  for (std::size_t i = 0; i < rgba.size(); i += 4) {
    expected.insert(expected.end(), rgba.begin() + static_cast<long>(i),
                    rgba.begin() + static_cast<long>(i) + 3);
  }
  EXPECT_EQ(decode_image_rgb(path, 1000).data, expected);
}

TEST_F(ImageTest, PngGreyIsReplicated) {
  const auto path = dir_ / "grey.png";
  const auto grey = pattern(6, 4, 1);
  write_png(path, 6, 4, PNG_FORMAT_GRAY, grey);
  std::vector<std::uint8_t> expected;
  for (const auto v : grey) expected.insert(expected.end(), {v, v, v});
  EXPECT_EQ(decode_image_rgb(path, 1000).data, expected);
}

TEST_F(ImageTest, JpegProbeAndDecode) {
  const auto path = dir_ / "flat.jpg";
  // A flat colour survives JPEG at quality 100 up to the colour conversion's rounding.
  std::vector<std::uint8_t> pixels;
  for (int i = 0; i < 24 * 16; ++i) pixels.insert(pixels.end(), {200, 100, 50});
  write_jpeg(path, 24, 16, 3, pixels, 100);

  const ImageInfo info = probe_image(path);
  EXPECT_EQ(info.width, 24);
  EXPECT_EQ(info.height, 16);
  EXPECT_EQ(info.format, ImageFormat::jpeg);

  const RgbImage image = decode_image_rgb(path, 24 * 16);
  ASSERT_EQ(image.width, 24);
  ASSERT_EQ(image.height, 16);
  ASSERT_EQ(image.data.size(), pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    EXPECT_NEAR(image.data[i], pixels[i], 2) << "byte " << i;
  }
}

TEST_F(ImageTest, JpegGreyBecomesEqualChannels) {
  const auto path = dir_ / "grey.jpg";
  write_jpeg(path, 16, 16, 1, pattern(16, 16, 1), 90);
  const RgbImage image = decode_image_rgb(path, 256);
  ASSERT_EQ(image.data.size(), 16U * 16U * 3U);
  for (std::size_t i = 0; i < image.data.size(); i += 3) {
    EXPECT_EQ(image.data[i], image.data[i + 1]);
    EXPECT_EQ(image.data[i], image.data[i + 2]);
  }
}

TEST_F(ImageTest, PixelLimitIsInclusive) {
  const auto path = dir_ / "limit.png";
  write_png(path, 64, 64, PNG_FORMAT_RGB, pattern(64, 64, 3));
  EXPECT_EQ(decode_image_rgb(path, 4096).data.size(), 64U * 64U * 3U);
  EXPECT_EQ(input_error_of([&] { (void)decode_image_rgb(path, 4095); }),
            path.string() +
                ": image is 64x64 = 4096 pixels, over the limit of 4095 "
                "(input.max_image_pixels); not decoded");
}

TEST_F(ImageTest, HugeHeaderRefusedBeforeDecoding) {
  // The header claims 20000x20000 and no pixel data follows: the limit must trip first.
  const auto path = dir_ / "huge.png";
  write_png_header_only(path, 20000, 20000);
  const ImageInfo info = probe_image(path);
  EXPECT_EQ(info.width, 20000);
  EXPECT_EQ(info.height, 20000);
  EXPECT_EQ(input_error_of([&] { (void)decode_image_rgb(path, 4096ULL * 4096ULL); }),
            path.string() +
                ": image is 20000x20000 = 400000000 pixels, over the limit of "
                "16777216 (input.max_image_pixels); not decoded");
  // Without the limit, the missing data is reported as truncation, not a crash.
  EXPECT_NE(input_error_of([&] {
              (void)decode_image_rgb(path, 1ULL << 40);
            }).find("truncated or corrupt PNG"),
            std::string::npos);
}

TEST_F(ImageTest, TruncatedPng) {
  const auto path = dir_ / "cut.png";
  write_png(path, 64, 64, PNG_FORMAT_RGB, pattern(64, 64, 3));
  truncate_to(path, 0.5);
  EXPECT_EQ(probe_image(path).width, 64);  // the header is intact
  const std::string message = input_error_of([&] { (void)decode_image_rgb(path, 1 << 20); });
  EXPECT_EQ(message.rfind(path.string() + ": truncated or corrupt PNG: ", 0), 0U) << message;
}

TEST_F(ImageTest, TruncatedPngHeader) {
  const auto path = dir_ / "cut-header.png";
  write_png(path, 64, 64, PNG_FORMAT_RGB, pattern(64, 64, 3));
  fs::resize_file(path, 20);  // signature + part of IHDR
  const std::string message = input_error_of([&] { (void)probe_image(path); });
  EXPECT_EQ(message.rfind(path.string() + ": invalid PNG header: ", 0), 0U) << message;
}

TEST_F(ImageTest, PngHeaderCrcIsChecked) {
  const auto path = dir_ / "crc.png";
  write_png(path, 16, 16, PNG_FORMAT_RGB, pattern(16, 16, 3));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(19);  // low byte of the IHDR width: 16 -> 255 without fixing the CRC
    f.put(static_cast<char>(0xFF));
  }
  EXPECT_EQ(input_error_of([&] { (void)probe_image(path); }),
            path.string() + ": invalid PNG header: IHDR CRC mismatch");
}

TEST_F(ImageTest, TruncatedJpeg) {
  const auto path = dir_ / "cut.jpg";
  write_jpeg(path, 64, 64, 3, pattern(64, 64, 3), 90);
  truncate_to(path, 0.6);
  EXPECT_EQ(probe_image(path).height, 64);
  EXPECT_EQ(input_error_of([&] { (void)decode_image_rgb(path, 1 << 20); }),
            path.string() + ": truncated JPEG: the file ends before the image data does");

  const auto head = dir_ / "cut-header.jpg";
  write_jpeg(head, 64, 64, 3, pattern(64, 64, 3), 90);
  fs::resize_file(head, 40);
  const std::string message = input_error_of([&] { (void)probe_image(head); });
  EXPECT_FALSE(message.empty());
  EXPECT_EQ(message.rfind(head.string() + ": ", 0), 0U) << message;
}

TEST_F(ImageTest, NotAnImage) {
  const auto text = dir_ / "notes.png";
  write_text(text, "this is not a picture\n");
  EXPECT_EQ(input_error_of([&] { (void)probe_image(text); }),
            text.string() + ": not a PNG or JPEG image");
  EXPECT_EQ(input_error_of([&] { (void)decode_image_rgb(text, 100); }),
            text.string() + ": not a PNG or JPEG image");

  const auto empty = dir_ / "empty.jpg";
  write_text(empty, "");
  EXPECT_EQ(input_error_of([&] { (void)probe_image(empty); }),
            empty.string() + ": empty file, not an image");

  const auto fake = dir_ / "fake.png";
  write_text(fake, std::string("\x89PNG\r\n\x1a\n", 8) + "garbage that is no chunk");
  const std::string message = input_error_of([&] { (void)probe_image(fake); });
  EXPECT_EQ(message.rfind(fake.string() + ": invalid PNG header: ", 0), 0U) << message;
}

TEST_F(ImageTest, MissingAndDirectory) {
  const auto missing = dir_ / "missing.png";
  EXPECT_EQ(input_error_of([&] { (void)probe_image(missing); }),
            missing.string() + ": image not found");
  EXPECT_EQ(input_error_of([&] { (void)decode_image_rgb(dir_, 100); }),
            dir_.string() + ": is a folder, not an image");
}

// Opening a FIFO for reading blocks until a writer comes: refused before the open, so probing
// (validation) and decoding (the worker) return at once.
TEST_F(ImageTest, AFifoIsRefusedWithoutOpeningIt) {
  const auto fifo = dir_ / "cat.png";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(input_error_of([&] { (void)probe_image(fifo); }),
            fifo.string() + ": is a FIFO, not an image");
  EXPECT_EQ(input_error_of([&] { (void)decode_image_rgb(fifo, 100); }),
            fifo.string() + ": is a FIFO, not an image");
}

}  // namespace
}  // namespace omnidp

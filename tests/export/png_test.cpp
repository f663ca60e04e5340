#include "omnidp/export/png.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"
#include "omnidp/common/image.hpp"
#include "results/test_util.hpp"

namespace omnidp::video_export {
namespace {

using results::testing::ScratchDir;

TEST(WritePng, OnePixelExact) {
  ScratchDir dir("png-one");
  const std::vector<std::uint8_t> rgb{1, 2, 3};
  write_png(rgb, 1, 1, dir.path() / "p.png");
  const RgbImage image = decode_image_rgb(dir.path() / "p.png", 1);
  EXPECT_EQ(image.width, 1);
  EXPECT_EQ(image.height, 1);
  EXPECT_EQ(image.data, rgb);
  EXPECT_EQ(probe_image(dir.path() / "p.png").format, ImageFormat::png);
}

TEST(WritePng, SizeMismatchIsRefused) {
  ScratchDir dir("png-size");
  const std::vector<std::uint8_t> rgb(11, 0);
  try {
    write_png(rgb, 2, 2, dir.path() / "p.png");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(), "cannot write a PNG of 2x2 from 11 bytes");
  }
}

TEST(WritePng, UnwritablePathIsAnIoError) {
  ScratchDir dir("png-io");
  const std::vector<std::uint8_t> rgb(3, 0);
  try {
    write_png(rgb, 1, 1, dir.path() / "missing" / "p.png");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.context().at(0), (dir.path() / "missing" / "p.png").string());
    EXPECT_EQ(e.message().rfind("cannot write PNG: ", 0), 0U) << e.message();
  }
}

}  // namespace
}  // namespace omnidp::video_export

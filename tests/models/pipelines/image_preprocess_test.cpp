#include "omnidp/models/pipelines/image_preprocess.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

// 7x5 RGB test pattern: value (x*37 + y*91 + c*53 + x*y*13) mod 256.
RgbImage pattern() {
  RgbImage im;
  im.width = 7;
  im.height = 5;
  for (int y = 0; y < im.height; ++y) {
    for (int x = 0; x < im.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        im.data.push_back(static_cast<std::uint8_t>((x * 37 + y * 91 + c * 53 + x * y * 13) % 256));
      }
    }
  }
  return im;
}

// Expected bytes: Pillow 9.4 `Image.frombytes("RGB", (7, 5), pattern).resize(size,
// Image.LANCZOS).tobytes()` (Pillow's resampler has been unchanged since 4.x).
TEST(PilResizeLanczos, DownscaleMatchesPillow) {
  const std::vector<std::uint8_t> expected{
      57,  118, 164, 132, 149, 153, 126, 151, 172, 158, 145, 126, 155, 147, 119, 156, 133, 124,
      149, 140, 114, 136, 100, 155, 98,  158, 136, 129, 150, 111, 142, 84,  148, 130, 118, 166};
  const auto out = pil_resize_lanczos(pattern(), 4, 3);
  EXPECT_EQ(out.width, 4);
  EXPECT_EQ(out.height, 3);
  EXPECT_EQ(out.data, expected);
}

TEST(PilResizeLanczos, OneAxisMatchesPillow) {
  const std::vector<std::uint8_t> vertical{
      43,  96,  149, 84,  137, 186, 121, 174, 126, 162, 114, 167, 102, 151, 204, 139,
      192, 94,  180, 101, 154, 129, 182, 85,  192, 95,  166, 123, 176, 87,  186, 97,
      150, 107, 178, 81,  188, 91,  162, 101, 101, 154, 65,  118, 171, 150, 203, 105,
      84,  137, 89,  169, 121, 174, 153, 55,  108, 87,  140, 188, 172, 101, 154};
  EXPECT_EQ(pil_resize_lanczos(pattern(), 7, 3).data, vertical);
  const std::vector<std::uint8_t> horizontal{
      24,  73,  131, 111, 179, 217, 198, 150, 90,  141, 194, 187, 166, 113, 91,
      85,  138, 208, 177, 121, 90,  130, 153, 146, 162, 106, 96,  84,  133, 126,
      170, 132, 110, 150, 103, 173, 124, 194, 134, 119, 97,  135, 114, 107, 164};
  EXPECT_EQ(pil_resize_lanczos(pattern(), 3, 5).data, horizontal);
}

TEST(PilResizeLanczos, UpscaleMatchesPillow) {
  const std::vector<std::uint8_t> expected{
      0,   43,  88,  5,   54,  97,  32,  75,  132, 51,  96,  184, 63,  134, 214, 91,  183, 236, 140,
      202, 255, 179, 246, 205, 200, 255, 28,  220, 97,  11,  231, 0,   60,  16,  64,  138, 27,  89,
      165, 61,  138, 182, 101, 171, 145, 141, 153, 131, 157, 119, 172, 123, 128, 224, 103, 190, 202,
      138, 227, 95,  187, 135, 93,  212, 56,  131, 71,  122, 188, 87,  145, 238, 128, 206, 236, 166,
      254, 93,  230, 174, 31,  237, 41,  94,  104, 47,  143, 19,  115, 169, 73,  153, 180, 134, 173,
      211, 157, 174, 230, 156, 227, 122, 197, 177, 159, 217, 133, 177, 147, 174, 106, 147, 156, 106,
      188, 93,  146, 125, 132, 87,  104, 124, 59,  148, 59,  137, 104, 127, 216, 53,  201, 246, 170,
      255, 28,  227, 153, 52,  235, 32,  102, 96,  71,  136, 44,  131, 203, 115, 168, 221, 152, 239,
      92,  212, 187, 15,  251, 48,  79,  130, 56,  139, 27,  113, 158, 77,  148, 37,  117, 98,  101,
      155, 70,  158, 124, 156, 97,  146, 151, 94,  190, 95,  148, 130, 163, 122, 131, 209, 132, 215,
      146, 181, 187, 52,  119, 137, 10,  55,  10,  60,  130, 41,  99,  179, 101, 179, 183, 140, 232,
      58,  212, 159, 21,  242, 46,  99,  131, 48,  141, 54,  143, 205, 109, 201, 254, 188, 102, 153,
      227, 14,  62,  59,  110, 208, 114, 176, 160, 155, 232, 89,  93,  159, 74,  93,  125, 133, 164,
      126, 179, 185, 48,  124, 125, 41,  109, 58,  125, 179, 114, 144, 195, 181, 131, 182, 109, 163,
      245, 182, 231, 133, 205, 248, 19,  57,  93,  94,  0,   99,  225, 100, 192, 245, 222, 71,  108,
      189, 0,   26,  43,  59,  111, 60,  166, 220, 128, 215, 255};
  const auto out = pil_resize_lanczos(pattern(), 11, 9);
  EXPECT_EQ(out.width, 11);
  EXPECT_EQ(out.height, 9);
  EXPECT_EQ(out.data, expected);
}

TEST(PilResizeLanczos, SameSizeIsACopyAndBadSizesThrow) {
  const auto im = pattern();
  EXPECT_EQ(pil_resize_lanczos(im, 7, 5).data, im.data);
  EXPECT_THROW((void)pil_resize_lanczos(im, 0, 5), InputError);
}

TEST(PreprocessImage, ScalesToMinusOneOne) {
  RgbImage im;
  im.width = 2;
  im.height = 1;
  im.data = {0, 255, 51, 128, 1, 254};
  const auto x = preprocess_image(im, 1, 2);
  ASSERT_EQ(x.sizes(), (std::vector<std::int64_t>{1, 3, 1, 2}));
  // channel c, column w: (v / 255) * 2 - 1 in float32.
  const auto v = [](int byte) { return 2.0F * (static_cast<float>(byte) / 255.0F) - 1.0F; };
  EXPECT_EQ(x[0][0][0][0].item<float>(), -1.0F);
  EXPECT_EQ(x[0][1][0][0].item<float>(), 1.0F);
  EXPECT_EQ(x[0][2][0][0].item<float>(), v(51));
  EXPECT_EQ(x[0][0][0][1].item<float>(), v(128));
  EXPECT_EQ(x[0][1][0][1].item<float>(), v(1));
  EXPECT_EQ(x[0][2][0][1].item<float>(), v(254));
  // A different size is resized first.
  EXPECT_EQ(preprocess_image(pattern(), 3, 4).sizes(), (std::vector<std::int64_t>{1, 3, 3, 4}));
}

TEST(ResizeAndCrop, CoversThenCentres) {
  // 4 x 2 (w x h) into 2 x 2: the 4 x 2 already covers 2 x 2 at height 2; columns 1..2 kept.
  RgbImage image;
  image.width = 4;
  image.height = 2;
  for (int i = 0; i < 8; ++i) {
    for (int c = 0; c < 3; ++c) image.data.push_back(static_cast<std::uint8_t>(10 * i + c));
  }
  const auto out = resize_and_crop(image, 2, 2);
  ASSERT_EQ(out.width, 2);
  ASSERT_EQ(out.height, 2);
  const std::vector<std::uint8_t> expected = {10, 11, 12, 20, 21, 22, 50, 51, 52, 60, 61, 62};
  EXPECT_EQ(out.data, expected);
  const auto t = image_to_tensor(out);
  EXPECT_EQ(t.sizes(), (std::vector<std::int64_t>{1, 3, 2, 2}));
  EXPECT_FLOAT_EQ(t[0][0][0][0].item<float>(), 10.0F / 255.0F * 2.0F - 1.0F);
}

}  // namespace
}  // namespace omnidp::models

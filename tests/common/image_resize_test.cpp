#include "omnidp/common/image_resize.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "omnidp/common/error.hpp"

namespace omnidp {
namespace {

// W x H RGB test pattern: value (x*37 + y*91 + c*53 + x*y*13) mod 256.
RgbImage pattern(int width, int height) {
  RgbImage im;
  im.width = width;
  im.height = height;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        im.data.push_back(static_cast<std::uint8_t>((x * 37 + y * 91 + c * 53 + x * y * 13) % 256));
      }
    }
  }
  return im;
}

using Bytes = std::vector<std::uint8_t>;

// pattern(7, 5) resized to 4 x 3 with `filter`: `expected` under both conventions.
void expect_7x5_to_4x3_both_conventions(ResampleFilter filter, const Bytes& expected) {
  for (const auto convention : {ResizeConvention::pillow, ResizeConvention::torch}) {
    EXPECT_EQ(resize_rgb(pattern(7, 5), 4, 3, filter, convention).data, expected)
        << (convention == ResizeConvention::pillow ? "pillow" : "torch");
  }
}

// Pillow 9.4: Image.frombytes("RGB", (7, 5), pattern).resize((4, 3), Image.LANCZOS).
TEST(ResizeRgb, PillowLanczosMatchesPillow) {
  const Bytes expected{57,  118, 164, 132, 149, 153, 126, 151, 172, 158, 145, 126,
                       155, 147, 119, 156, 133, 124, 149, 140, 114, 136, 100, 155,
                       98,  158, 136, 129, 150, 111, 142, 84,  148, 130, 118, 166};
  const auto out = resize_rgb(pattern(7, 5), 4, 3, ResampleFilter::lanczos, ResizeConvention::pillow);
  EXPECT_EQ(out.width, 4);
  EXPECT_EQ(out.height, 3);
  EXPECT_EQ(out.data, expected);
}

// The expected bytes of the bicubic and bilinear tests come from a line-by-line transcription
// of Resample.c (Pillow) and of UpSampleKernel.cpp's uint8 antialiased path (PyTorch) that
// reproduces the Lanczos bytes above; the PyTorch side is also checked bit for bit against
// torchvision's output in the SigLIP processor fixture (tests/models/vision).
TEST(ResizeRgb, PillowBicubicDownscaleBothAxes) {
  const Bytes expected{57,  114, 164, 131, 150, 148, 126, 151, 175, 162, 142, 126,
                       155, 144, 116, 148, 135, 127, 148, 142, 116, 139, 98,  152,
                       103, 160, 142, 127, 149, 112, 143, 84,  142, 130, 119, 172};
  expect_7x5_to_4x3_both_conventions(ResampleFilter::bicubic, expected);
}

TEST(ResizeRgb, BicubicOneAxisAndUpscale) {
  const Bytes horizontal{27,  80,  134, 111, 172, 213, 195, 150, 91,  136, 189, 187, 167, 112, 95,
                         90,  143, 204, 182, 123, 87,  127, 156, 147, 160, 101, 99,  81,  134, 132,
                         171, 124, 107, 153, 108, 169, 127, 189, 129, 119, 101, 143, 111, 109, 163};
  for (const auto convention : {ResizeConvention::pillow, ResizeConvention::torch}) {
    const auto out = resize_rgb(pattern(7, 5), 3, 5, ResampleFilter::bicubic, convention);
    EXPECT_EQ(out.width, 3);
    EXPECT_EQ(out.height, 5);
    EXPECT_EQ(out.data, horizontal);
    // Upscaling 7x5 -> 11x9: the first row (support 2, no antialias widening).
    const auto up = resize_rgb(pattern(7, 5), 11, 9, ResampleFilter::bicubic, convention);
    ASSERT_EQ(up.data.size(), 11U * 9U * 3U);
    const Bytes first_row{0,   43,  96,  5,   58,  110, 31,  84,  139, 55,  106,
                          177, 76,  137, 205, 100, 174, 227, 138, 199, 255, 168,
                          227, 210, 190, 253, 35,  216, 107, 31,  232, 0,   61};
    EXPECT_EQ(Bytes(up.data.begin(), up.data.begin() + 33), first_row);
    const Bytes last_row_tail{200, 56, 108, 183, 0, 53, 41, 76, 129, 75, 156, 209, 129, 204, 255};
    EXPECT_EQ(Bytes(up.data.end() - 15, up.data.end()), last_row_tail);
  }
}

// The int16 weights of PyTorch round differently from Pillow's 22-bit ones: a few bytes of a
// 16x12 -> 5x5 bicubic downscale differ by one.
TEST(ResizeRgb, TorchAndPillowBicubicDifferWhereTheWeightsRoundApart) {
  const Bytes pillow{116, 136, 147, 141, 145, 143, 120, 116, 121, 132, 155, 125, 113, 95,  111,
                     132, 148, 120, 140, 114, 140, 131, 124, 143, 127, 132, 115, 141, 127, 122,
                     121, 146, 165, 155, 114, 151, 148, 129, 142, 133, 140, 136, 177, 121, 140,
                     154, 95,  155, 128, 119, 126, 135, 123, 118, 148, 100, 141, 116, 118, 154,
                     127, 111, 129, 108, 116, 125, 116, 124, 137, 118, 134, 113, 95,  155, 116};
  Bytes torch = pillow;
  torch[8] = 122;
  torch[21] = 132;
  torch[23] = 144;
  torch[36] = 149;
  EXPECT_EQ(resize_rgb(pattern(16, 12), 5, 5, ResampleFilter::bicubic, ResizeConvention::pillow).data,
            pillow);
  EXPECT_EQ(resize_rgb(pattern(16, 12), 5, 5, ResampleFilter::bicubic, ResizeConvention::torch).data,
            torch);
}

TEST(ResizeRgb, BilinearDownscale) {
  const Bytes expected{61,  114, 162, 128, 150, 146, 127, 149, 173, 163, 139, 129,
                       151, 143, 117, 142, 135, 129, 148, 141, 120, 140, 102, 148,
                       106, 159, 144, 125, 147, 114, 142, 88,  141, 131, 119, 172};
  expect_7x5_to_4x3_both_conventions(ResampleFilter::bilinear, expected);
}

TEST(ResizeRgb, SameSizeIsACopyAndBadArgumentsThrow) {
  const auto im = pattern(7, 5);
  EXPECT_EQ(resize_rgb(im, 7, 5, ResampleFilter::bicubic, ResizeConvention::torch).data, im.data);
  EXPECT_THROW((void)resize_rgb(im, 0, 5, ResampleFilter::bicubic, ResizeConvention::pillow),
               InputError);
  EXPECT_THROW((void)resize_rgb(im, 3, 3, ResampleFilter::lanczos, ResizeConvention::torch),
               InputError);
  RgbImage short_data = im;
  short_data.data.pop_back();
  EXPECT_THROW((void)resize_rgb(short_data, 3, 3, ResampleFilter::bicubic, ResizeConvention::pillow),
               InputError);
}

TEST(ResizeRgb, PilResampleCodes) {
  EXPECT_EQ(resample_filter_from_pil(3), ResampleFilter::bicubic);
  EXPECT_EQ(resample_filter_from_pil(2), ResampleFilter::bilinear);
  EXPECT_EQ(resample_filter_from_pil(1), ResampleFilter::lanczos);
  EXPECT_THROW((void)resample_filter_from_pil(0), std::invalid_argument);
  EXPECT_THROW((void)resample_filter_from_pil(4), std::invalid_argument);
  EXPECT_STREQ(to_string(ResampleFilter::bicubic), "bicubic");
}

}  // namespace
}  // namespace omnidp

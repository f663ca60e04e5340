#include "omnidp/models/wan/image_preprocess.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp::models::wan {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= std::numbers::pi;
  return std::sin(x) / x;
}

double lanczos(double x) {
  if (-3.0 <= x && x < 3.0) return sinc(x) * sinc(x / 3.0);
  return 0.0;
}

// Per output pixel: the first input index, the tap count and ksize fixed-point coefficients.
struct Coeffs {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<std::int32_t> k;  // out_size * ksize
};

Coeffs precompute(int in_size, int out_size) {
  constexpr double kSupport = 3.0;
  const double scale = static_cast<double>(static_cast<float>(in_size)) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = kSupport * filterscale;
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<std::size_t>(out_size));
  c.count.resize(static_cast<std::size_t>(out_size));
  c.k.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(c.ksize), 0);
  std::vector<double> w(static_cast<std::size_t>(c.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    xmin = std::max(xmin, 0);
    int xmax = static_cast<int>(center + support + 0.5);
    xmax = std::min(xmax, in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[static_cast<std::size_t>(x)] = lanczos((x + xmin - center + 0.5) * ss);
      ww += w[static_cast<std::size_t>(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      double v = w[static_cast<std::size_t>(x)];
      if (ww != 0.0) v /= ww;
      const double fixed = v * (1 << kPrecisionBits);
      c.k[static_cast<std::size_t>(xx) * static_cast<std::size_t>(c.ksize) + static_cast<std::size_t>(x)] =
          static_cast<std::int32_t>(v < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.first[static_cast<std::size_t>(xx)] = xmin;
    c.count[static_cast<std::size_t>(xx)] = xmax;
  }
  return c;
}

std::uint8_t clip8(std::int32_t v) {
  const std::int32_t shifted = v >> kPrecisionBits;
  return static_cast<std::uint8_t>(std::clamp(shifted, 0, 255));
}

// One separable pass over an RGB buffer [rows, cols, 3]. horizontal: resamples columns of
// rows [row0, row0 + out_rows); vertical: resamples rows.
std::vector<std::uint8_t> pass(const std::vector<std::uint8_t>& in, int in_cols, const Coeffs& c,
                               bool horizontal, int row0, int out_rows, int out_cols) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(out_rows) * static_cast<std::size_t>(out_cols) * 3U);
  const auto at = [&](int r, int col, int ch) {
    return static_cast<std::int32_t>(
        in[(static_cast<std::size_t>(r) * static_cast<std::size_t>(in_cols) + static_cast<std::size_t>(col)) * 3U +
           static_cast<std::size_t>(ch)]);
  };
  for (int yy = 0; yy < out_rows; ++yy) {
    for (int xx = 0; xx < out_cols; ++xx) {
      const int o = horizontal ? xx : yy;
      const int first = c.first[static_cast<std::size_t>(o)];
      const int count = c.count[static_cast<std::size_t>(o)];
      const std::int32_t* k = &c.k[static_cast<std::size_t>(o) * static_cast<std::size_t>(c.ksize)];
      for (int ch = 0; ch < 3; ++ch) {
        std::int32_t ss = 1 << (kPrecisionBits - 1);
        for (int t = 0; t < count; ++t) {
          const std::int32_t v = horizontal ? at(yy + row0, t + first, ch) : at(t + first, xx, ch);
          ss += v * k[t];
        }
        out[(static_cast<std::size_t>(yy) * static_cast<std::size_t>(out_cols) + static_cast<std::size_t>(xx)) * 3U +
            static_cast<std::size_t>(ch)] = clip8(ss);
      }
    }
  }
  return out;
}

}  // namespace

RgbImage pil_resize_lanczos(const RgbImage& image, int width, int height) {
  if (width <= 0 || height <= 0 || image.width <= 0 || image.height <= 0) {
    throw InputError("<image>", "cannot resize " + std::to_string(image.width) + "x" +
                                    std::to_string(image.height) + " to " + std::to_string(width) +
                                    "x" + std::to_string(height));
  }
  if (image.width == width && image.height == height) return image;
  const bool need_h = width != image.width;
  const bool need_v = height != image.height;
  Coeffs vert = precompute(image.height, height);
  const int ybox_first = vert.first.front();
  const int ybox_last = vert.first.back() + vert.count.back();

  std::vector<std::uint8_t> data = image.data;
  int rows = image.height;
  int cols = image.width;
  if (need_h) {
    const Coeffs horiz = precompute(image.width, width);
    for (auto& f : vert.first) f -= ybox_first;
    data = pass(data, cols, horiz, true, ybox_first, ybox_last - ybox_first, width);
    rows = ybox_last - ybox_first;
    cols = width;
  }
  if (need_v) {
    data = pass(data, cols, vert, false, 0, height, cols);
    rows = height;
  }
  RgbImage out;
  out.width = cols;
  out.height = rows;
  out.data = std::move(data);
  return out;
}

torch::Tensor preprocess_image(const RgbImage& image, int height, int width) {
  const RgbImage sized = pil_resize_lanczos(image, width, height);
  auto bytes = torch::from_blob(const_cast<std::uint8_t*>(sized.data.data()),
                                {sized.height, sized.width, 3}, torch::kUInt8);
  // numpy: astype(float32) / 255.0; then torch: 2 * x - 1 (all float32).
  auto x = bytes.to(torch::kFloat32) / 255.0;
  x = 2.0 * x - 1.0;
  return x.permute({2, 0, 1}).unsqueeze(0).contiguous();
}

}  // namespace omnidp::models::wan

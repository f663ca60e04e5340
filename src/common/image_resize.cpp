#include "omnidp/common/image_resize.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"

namespace omnidp {
namespace {

// Pillow's fixed point (Resample.c: PRECISION_BITS = 32 - 8 - 2).
constexpr int kPillowPrecision = 22;

double pillow_filter(ResampleFilter filter, double x) {
  switch (filter) {
    case ResampleFilter::bilinear: x = std::abs(x); return x < 1.0 ? 1.0 - x : 0.0;
    case ResampleFilter::bicubic: {
      constexpr double a = -0.5;
      x = std::abs(x);
      if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
      if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
      return 0.0;
    }
    case ResampleFilter::lanczos: {
      const auto sinc = [](double v) {
        if (v == 0.0) return 1.0;
        v *= std::numbers::pi;
        return std::sin(v) / v;
      };
      return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0;
    }
  }
  return 0.0;
}

// PyTorch's antialiasing filters (UpSampleKernel.cpp, aa_filter), same expressions.
double torch_filter(ResampleFilter filter, double x) {
  x = std::abs(x);
  if (filter == ResampleFilter::bilinear) return x < 1.0 ? 1.0 - x : 0.0;
  constexpr double a = -0.5;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

double filter_support(ResampleFilter filter) {
  switch (filter) {
    case ResampleFilter::bilinear: return 1.0;
    case ResampleFilter::bicubic: return 2.0;
    case ResampleFilter::lanczos: return 3.0;
  }
  return 0.0;
}

// Per output pixel along one axis: the first input index, the tap count and ksize
// fixed-point weights with `precision` fractional bits.
struct Taps {
  int ksize = 0;
  int precision = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<std::int32_t> k;  // out_size * ksize
};

std::int32_t round_fixed(double v, int precision) {
  const double fixed = v * static_cast<double>(std::int64_t{1} << precision);
  return static_cast<std::int32_t>(v < 0 ? fixed - 0.5 : fixed + 0.5);
}

Taps make_taps(int in_size, int out_size, ResampleFilter filter, ResizeConvention convention) {
  const bool pil = convention == ResizeConvention::pillow;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = filter_support(filter) * filterscale;
  const double inv = 1.0 / filterscale;
  Taps t;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  const auto ks = static_cast<std::size_t>(t.ksize);
  t.first.resize(static_cast<std::size_t>(out_size));
  t.count.resize(static_cast<std::size_t>(out_size));
  std::vector<double> w(static_cast<std::size_t>(out_size) * ks, 0.0);
  double w_max = 0.0;
  for (int o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int n = std::clamp(xmax - xmin, 0, t.ksize);
    double* row = &w[static_cast<std::size_t>(o) * ks];
    double total = 0.0;
    for (int x = 0; x < n; ++x) {
      const double arg = (x + xmin - center + 0.5) * inv;
      row[x] = pil ? pillow_filter(filter, arg) : torch_filter(filter, arg);
      total += row[x];
    }
    if (total != 0.0) {
      for (int x = 0; x < n; ++x) {
        row[x] /= total;
        w_max = std::max(w_max, row[x]);
      }
    }
    t.first[static_cast<std::size_t>(o)] = xmin;
    t.count[static_cast<std::size_t>(o)] = n;
  }
  if (pil) {
    t.precision = kPillowPrecision;
  } else {
    // The largest precision (< 22) whose doubled largest weight still fits an int16.
    for (t.precision = 0; t.precision < 22; ++t.precision) {
      const auto next = static_cast<int>(0.5 + w_max * static_cast<double>(1 << (t.precision + 1)));
      if (next >= (1 << 15)) break;
    }
  }
  t.k.resize(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::int32_t v = round_fixed(w[i], t.precision);
    t.k[i] = pil ? v : static_cast<std::int16_t>(v);
  }
  return t;
}

// One separable pass over an RGB buffer [rows, cols, 3]. horizontal: resamples the columns of
// rows [row0, row0 + out_rows); vertical: resamples rows.
std::vector<std::uint8_t> pass(const std::vector<std::uint8_t>& in, int in_cols, const Taps& t,
                               bool horizontal, int row0, int out_rows, int out_cols) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(out_rows) *
                                static_cast<std::size_t>(out_cols) * 3U);
  const auto at = [&](int r, int col, int ch) {
    return static_cast<std::int32_t>(
        in[(static_cast<std::size_t>(r) * static_cast<std::size_t>(in_cols) +
            static_cast<std::size_t>(col)) *
               3U +
           static_cast<std::size_t>(ch)]);
  };
  const std::int32_t half = std::int32_t{1} << (t.precision > 0 ? t.precision - 1 : 0);
  for (int yy = 0; yy < out_rows; ++yy) {
    for (int xx = 0; xx < out_cols; ++xx) {
      const auto o = static_cast<std::size_t>(horizontal ? xx : yy);
      const int first = t.first[o];
      const int count = t.count[o];
      const std::int32_t* k = &t.k[o * static_cast<std::size_t>(t.ksize)];
      for (int ch = 0; ch < 3; ++ch) {
        std::int32_t sum = t.precision > 0 ? half : 0;
        for (int i = 0; i < count; ++i) {
          sum += (horizontal ? at(yy + row0, i + first, ch) : at(i + first, xx, ch)) * k[i];
        }
        out[(static_cast<std::size_t>(yy) * static_cast<std::size_t>(out_cols) +
             static_cast<std::size_t>(xx)) *
                3U +
            static_cast<std::size_t>(ch)] =
            static_cast<std::uint8_t>(std::clamp(sum >> t.precision, 0, 255));
      }
    }
  }
  return out;
}

}  // namespace

ResampleFilter resample_filter_from_pil(int code) {
  switch (code) {
    case 1: return ResampleFilter::lanczos;
    case 2: return ResampleFilter::bilinear;
    case 3: return ResampleFilter::bicubic;
    default:
      throw std::invalid_argument(
          fmt::format("resample {} is not supported (1 lanczos, 2 bilinear, 3 bicubic)", code));
  }
}

const char* to_string(ResampleFilter filter) noexcept {
  switch (filter) {
    case ResampleFilter::bilinear: return "bilinear";
    case ResampleFilter::bicubic: return "bicubic";
    case ResampleFilter::lanczos: return "lanczos";
  }
  return "?";
}

RgbImage resize_rgb(const RgbImage& image, int width, int height, ResampleFilter filter,
                    ResizeConvention convention) {
  if (width <= 0 || height <= 0 || image.width <= 0 || image.height <= 0 ||
      image.data.size() !=
          static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height) * 3U) {
    throw InputError("<image>", fmt::format("cannot resize {}x{} to {}x{}", image.width,
                                            image.height, width, height));
  }
  if (convention == ResizeConvention::torch && filter == ResampleFilter::lanczos) {
    throw InputError("<image>", "the torch resize convention has no lanczos filter");
  }
  if (image.width == width && image.height == height) return image;
  const bool need_h = width != image.width;
  const bool need_v = height != image.height;
  Taps vert = make_taps(image.height, height, filter, convention);
  std::vector<std::uint8_t> data = image.data;
  int rows = image.height;
  int cols = image.width;
  if (need_h) {
    // Only the rows that the vertical pass reads (Pillow's ybox; the values do not change).
    int row_first = 0;
    int row_last = image.height;
    if (need_v) {
      row_first = vert.first.front();
      row_last = vert.first.back() + vert.count.back();
      for (auto& f : vert.first) f -= row_first;
    }
    const Taps horiz = make_taps(image.width, width, filter, convention);
    data = pass(data, cols, horiz, true, row_first, row_last - row_first, width);
    rows = row_last - row_first;
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

}  // namespace omnidp

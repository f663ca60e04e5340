#include "omnidp/models/size_buckets.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace omnidp::models {
namespace {

// Python's round(x, 5) of x = a / b: correctly rounded from x's exact binary value, exact ties
// to even (17 / 64 = 0.265625 -> 0.26562). glibc's printf rounds the same way (exactly, in the
// default rounding mode); the decimal is read back to its nearest double, as Python returns.
double round5(int a, int b) {
  const double x = static_cast<double>(a) / static_cast<double>(b);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.5f", x);
  return std::strtod(buf, nullptr);
}

}  // namespace

std::vector<FrameSize> hv15_crop_sizes(int target_size, int patch) {
  if (target_size <= 0 || patch <= 0) {
    throw std::invalid_argument("hv15_crop_sizes: target_size and patch must be > 0");
  }
  const double side = static_cast<double>(target_size) / static_cast<double>(patch);
  const auto patches = static_cast<std::int64_t>(std::nearbyint(side * side));  // half to even
  constexpr std::int64_t kMaxRatio = 4;
  std::vector<FrameSize> sizes;
  std::int64_t a = patches;
  std::int64_t b = 1;
  while (a > 0) {
    if (std::max(a, b) <= kMaxRatio * std::min(a, b)) {
      sizes.push_back({static_cast<int>(a * patch), static_cast<int>(b * patch)});
    }
    if ((b + 1) * a <= patches) {
      ++b;
    } else {
      --a;
    }
  }
  return sizes;
}

FrameSize hv15_bucket_size(int image_height, int image_width, int target_size, int patch) {
  if (image_height <= 0 || image_width <= 0) {
    throw std::invalid_argument("hv15_bucket_size: image sizes must be > 0");
  }
  const auto sizes = hv15_crop_sizes(target_size, patch);
  const double aspect = static_cast<double>(image_height) / static_cast<double>(image_width);
  const bool portrait = aspect >= 1.0;
  const FrameSize* best = nullptr;
  double best_diff = std::numeric_limits<double>::infinity();
  for (const auto& s : sizes) {
    const double diff = round5(s.height / patch, s.width / patch) - aspect;
    if (portrait ? diff > 0.0 : diff < 0.0) continue;
    if (std::abs(diff) < best_diff) {
      best_diff = std::abs(diff);
      best = &s;
    }
  }
  if (best == nullptr) {
    throw std::invalid_argument(
        fmt::format("hv15_bucket_size: no size bucket for target_size {}", target_size));
  }
  return *best;
}

FrameSize area_size(int image_height, int image_width, double area, int multiple) {
  if (image_height <= 0 || image_width <= 0 || !(area > 0.0) || multiple <= 0) {
    throw std::invalid_argument("area_size: sizes, area and multiple must be > 0");
  }
  const double ratio = static_cast<double>(image_height) / static_cast<double>(image_width);
  // std::nearbyint rounds halves to even under the default rounding mode, as Python's round.
  const auto side = [multiple](double exact) {
    const auto rounded = static_cast<std::int64_t>(std::nearbyint(exact));
    return static_cast<int>(std::max<std::int64_t>(rounded / multiple, 1) * multiple);
  };
  return {side(std::sqrt(area * ratio)), side(std::sqrt(area / ratio))};
}

}  // namespace omnidp::models

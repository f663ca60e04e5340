#pragma once
// The largest difference between two videos' bytes, in uint8 levels (256 where their shapes
// differ): "within one level" checks of two computations of the same video.

#include <algorithm>
#include <cstdlib>

#include "omnidp/common/video.hpp"

namespace omnidp::test {

[[nodiscard]] inline int max_level_difference(const Video& a, const Video& b) {
  if (a.frames != b.frames || a.height != b.height || a.width != b.width ||
      a.data.size() != b.data.size())
    return 256;
  int most = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    most = std::max(most, std::abs(static_cast<int>(a.data[i]) - static_cast<int>(b.data[i])));
  return most;
}

}  // namespace omnidp::test

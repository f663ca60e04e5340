#include "omnidp/config/step_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/format.hpp"
#include "omnidp/common/sha256.hpp"

namespace omnidp {

double StepCacheConfig::default_threshold() const noexcept {
  switch (policy) {
    case CachePolicy::first_block: return 0.05;
    case CachePolicy::magcache: return 0.06;
    case CachePolicy::off:
    case CachePolicy::taylorseer: break;
  }
  return 0.0;
}

std::string describe_cache(const StepCacheConfig& c) {
  switch (c.policy) {
    case CachePolicy::off: return "off";
    case CachePolicy::first_block:
      return fmt::format("first_block(threshold {})", shortest_real(c.resolved_threshold()));
    case CachePolicy::taylorseer:
      return fmt::format(
          "taylorseer(cache_interval {}, disable_cache_before_step {}, max_order {})",
          c.cache_interval, c.disable_cache_before_step, c.max_order);
    case CachePolicy::magcache: {
      std::string ratios = "preset";  // the checkpoint's published ratios (mag_presets.hpp)
      if (c.calibrate) {
        ratios = "calibrate";
      } else if (!c.mag_ratios.empty()) {
        std::string text;
        for (const double r : c.mag_ratios) text += shortest_real(r) + ",";
        ratios = fmt::format("{}:{}", c.mag_ratios.size(), sha256_hex(text).substr(0, 12));
      }
      return fmt::format(
          "magcache(threshold {}, max_skip_steps {}, retention_ratio {}, mag_ratios {})",
          shortest_real(c.resolved_threshold()), c.max_skip_steps, shortest_real(c.retention_ratio),
          ratios);
    }
  }
  return "off";
}

}  // namespace omnidp

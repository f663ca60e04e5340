#include "omnidp/config/step_cache.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"

namespace omnidp {
namespace {

// The ConfigError message of a manifest line's "cache" text, or "" when it is valid.
std::string cache_error(const std::string& text) {
  try {
    (void)parse_step_cache(text, "cache");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(StepCacheConfig, DefaultThresholdPerPolicy) {
  StepCacheConfig c;
  EXPECT_DOUBLE_EQ(c.default_threshold(), 0.0);
  c.policy = CachePolicy::first_block;
  EXPECT_DOUBLE_EQ(c.resolved_threshold(), 0.05);
  c.policy = CachePolicy::magcache;
  EXPECT_DOUBLE_EQ(c.resolved_threshold(), 0.06);
  c.threshold = 0.1;
  EXPECT_DOUBLE_EQ(c.resolved_threshold(), 0.1);
  c.policy = CachePolicy::taylorseer;
  EXPECT_DOUBLE_EQ(c.default_threshold(), 0.0);
}

TEST(StepCacheConfig, DescribedAsTheNumericsProfileNamesIt) {
  EXPECT_EQ(describe_cache(parse_step_cache("off", "cache")), "off");
  EXPECT_EQ(describe_cache(parse_step_cache("first_block", "cache")),
            "first_block(threshold 0.05)");
  EXPECT_EQ(describe_cache(parse_step_cache("taylorseer", "cache")),
            "taylorseer(cache_interval 5, disable_cache_before_step 3, max_order 1)");
  EXPECT_EQ(describe_cache(parse_step_cache("{policy: magcache, calibrate: true}", "cache")),
            "magcache(threshold 0.06, max_skip_steps 3, retention_ratio 0.2, mag_ratios "
            "calibrate)");
  // The ratios by count and hash: another list, another profile.
  const auto a = describe_cache(parse_step_cache("{policy: magcache, mag_ratios: [1, 0.99]}", "c"));
  const auto b = describe_cache(parse_step_cache("{policy: magcache, mag_ratios: [1, 0.98]}", "c"));
  EXPECT_EQ(a.rfind("mag_ratios 2:", std::string::npos) != std::string::npos, true) << a;
  EXPECT_NE(a, b);
}

TEST(StepCacheConfig, JsonAndYamlTextReadByTheSameRules) {
  const auto c = parse_step_cache(
      R"({"policy": "magcache", "threshold": 0.1, "max_skip_steps": 2, "mag_ratios": [1.0, 1.02]})",
      "cache");
  EXPECT_EQ(c.policy, CachePolicy::magcache);
  EXPECT_DOUBLE_EQ(c.resolved_threshold(), 0.1);
  EXPECT_EQ(c.max_skip_steps, 2);
  EXPECT_EQ(c.mag_ratios, (std::vector<double>{1.0, 1.02}));
  EXPECT_EQ(cache_error("{policy: taylorseer, max_skip_steps: 2}"),
            "cache.max_skip_steps: not a key of the taylorseer cache (its keys: cache_interval, "
            "disable_cache_before_step, max_order)");
  EXPECT_EQ(cache_error("{policy: off, threshold: 0.1}"),
            "cache.threshold: not a key of the off cache (its keys: none)");
  EXPECT_EQ(cache_error("{policy: first_block, threshold: 11}"),
            "cache.threshold: 11.0 is out of range (expected a number in (0, 10])");
  EXPECT_EQ(cache_error("{policy: magcache, mag_ratios: [1, 0]}"),
            "cache.mag_ratios[1]: 0.0 is out of range (expected a number in (0, 100])");
  EXPECT_EQ(cache_error("{policy: magcache, calibrate: true, mag_ratios: [1]}"),
            "cache.calibrate: calibrate measures the ratios: leave mag_ratios out");
}

}  // namespace
}  // namespace omnidp

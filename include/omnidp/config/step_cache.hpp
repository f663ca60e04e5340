#pragma once
// generation.cache as a value (docs/models.md, "Step caching"; docs/configuration.md): the
// policy and its parameters, the defaults, and the text that names it in the numerics profile.
// YAML reading and checking: src/config/step_cache_schema.cpp (through config.hpp's parsers). A
// plain value; thread-safe to read.

#include <optional>
#include <string>
#include <vector>

namespace omnidp {

// Step caching (docs/models.md, "Step caching"): which transformer forwards of a request are
// computed and which are served from a cache. YAML `generation.cache`: a policy name (its
// parameters at their defaults) or a map {policy: ..., <the policy's keys>}.
enum class CachePolicy { off, first_block, taylorseer, magcache };

struct StepCacheConfig {
  CachePolicy policy = CachePolicy::off;
  // first_block: the largest relative mean change of the first block's residual that still
  // skips the other blocks; magcache: the largest accumulated error that skips a step. Unset:
  // the policy's default (default_threshold()).
  std::optional<double> threshold;
  // taylorseer: full forwards on steps < disable_cache_before_step and every cache_interval-th
  // step after it; the others extrapolate the output from divided differences of order
  // <= max_order.
  int cache_interval = 5;
  int disable_cache_before_step = 3;
  int max_order = 1;
  // magcache: at most max_skip_steps skipped in a row; none in the first retention_ratio of
  // the steps; mag_ratios per step (empty: the checkpoint's published ratios where MagCache has
  // them, docs/models.md "Step caching");
  // calibrate: skip nothing and log the ratios of each request.
  int max_skip_steps = 3;
  double retention_ratio = 0.2;
  std::vector<double> mag_ratios;
  bool calibrate = false;

  // 0.05 for first_block, 0.06 for magcache, 0 otherwise.
  [[nodiscard]] double default_threshold() const noexcept;
  [[nodiscard]] double resolved_threshold() const noexcept {
    return threshold.value_or(default_threshold());
  }
  friend bool operator==(const StepCacheConfig&, const StepCacheConfig&) = default;
};

// "off", "first_block(threshold 0.05)", "taylorseer(cache_interval 5, disable_cache_before_step
// 3, max_order 1)", "magcache(threshold 0.06, max_skip_steps 3, retention_ratio 0.2,
// mag_ratios <count>:<first 12 hex of their SHA-256> | preset | calibrate)": the numerics
// profile's `cache` value and the text --dry-run prints. Never holds ';' or '='.
[[nodiscard]] std::string describe_cache(const StepCacheConfig& cache);

}  // namespace omnidp

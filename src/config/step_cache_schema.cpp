// generation.cache's YAML schema (docs/configuration.md): the keys of each policy's map, how
// each is read, written back and checked (yaml_schema.hpp declares what config.cpp uses).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/config/step_cache.hpp"
#include "yaml_schema.hpp"

namespace omnidp::config_schema {
namespace {

// generation.cache: a policy name, or a map {policy: ..., the policy's own keys}; a key of
// another policy is an error, not ignored. One entry per key: how it is read and written.
struct CacheKey {
  std::string name;
  std::function<void(StepCacheConfig&, const Node&, const std::string& path)> read;
  std::function<void(const StepCacheConfig&, YAML::Emitter&)> write;
};

template <class T>
CacheKey cache_key(std::string name, T StepCacheConfig::*member) {
  return {std::move(name),
          [member](StepCacheConfig& c, const Node& node, const std::string& path) {
            read_into(node, path, c.*member);
          },
          [member](const StepCacheConfig& c, YAML::Emitter& out) { write_value(out, c.*member); }};
}

// The keys of each policy's map, in the order they are written.
const std::vector<CacheKey>& cache_keys(CachePolicy policy) {
  using C = StepCacheConfig;
  static const CacheKey threshold{
      "threshold",
      [](C& c, const Node& node, const std::string& path) {
        double v = 0.0;
        read_into(node, path, v);
        c.threshold = v;
      },
      [](const C& c, YAML::Emitter& out) { write_value(out, c.resolved_threshold()); }};
  static const CacheKey mag_ratios{"mag_ratios",
                                   [](C& c, const Node& node, const std::string& path) {
                                     if (!node.IsSequence())
                                       type_error(path, "a list of numbers", node);
                                     require_tag(node, path, {Tag::seq}, "a list of numbers");
                                     c.mag_ratios.assign(node.size(), 0.0);
                                     for (std::size_t i = 0; i < node.size(); ++i)
                                       read_into(node[i], fmt::format("{}[{}]", path, i),
                                                 c.mag_ratios[i]);
                                   },
                                   [](const C& c, YAML::Emitter& out) {
                                     out << YAML::Flow << YAML::BeginSeq;
                                     for (const double v : c.mag_ratios) write_value(out, v);
                                     out << YAML::EndSeq;
                                   }};
  static const std::vector<CacheKey> none;
  static const std::vector<CacheKey> first_block{threshold};
  static const std::vector<CacheKey> taylorseer{
      cache_key("cache_interval", &C::cache_interval),
      cache_key("disable_cache_before_step", &C::disable_cache_before_step),
      cache_key("max_order", &C::max_order)};
  static const std::vector<CacheKey> magcache{threshold,
                                              cache_key("max_skip_steps", &C::max_skip_steps),
                                              cache_key("retention_ratio", &C::retention_ratio),
                                              mag_ratios, cache_key("calibrate", &C::calibrate)};
  switch (policy) {
    case CachePolicy::first_block: return first_block;
    case CachePolicy::taylorseer: return taylorseer;
    case CachePolicy::magcache: return magcache;
    case CachePolicy::off: break;
  }
  return none;
}

}  // namespace

StepCacheConfig read_step_cache(const Node& node, const std::string& path) {
  StepCacheConfig c;
  if (node.IsScalar()) {
    read_into(node, path, c.policy);
    return c;
  }
  if (!node.IsMap()) {
    type_error(path, "off | first_block | taylorseer | magcache, or a map with a policy", node);
  }
  require_tag(node, path, {Tag::map}, "a policy name or a map with a policy");
  const Node policy = node["policy"];
  if (!policy) {
    throw ConfigError(path + ".policy",
                      "required in a cache map (expected off | first_block | "
                      "taylorseer | magcache)");
  }
  read_into(policy, path + ".policy", c.policy);
  const auto& keys = cache_keys(c.policy);
  for (const auto& item : node) {
    const std::string key = key_text(item.first, path);
    if (key == "policy") continue;
    const std::string at = path + "." + key;
    const auto spec =
        std::find_if(keys.begin(), keys.end(), [&](const CacheKey& k) { return k.name == key; });
    if (spec == keys.end()) {
      std::vector<std::string> names;
      for (const auto& k : keys) names.push_back(k.name);
      throw ConfigError(at,
                        fmt::format("not a key of the {} cache (its keys: {})", enum_name(c.policy),
                                    names.empty() ? std::string("none") : join(names, ", ")));
    }
    spec->read(c, item.second, at);
  }
  return c;
}

void check_step_cache(const StepCacheConfig& c, const std::string& path) {
  const double t = c.resolved_threshold();
  if (c.policy == CachePolicy::first_block || c.policy == CachePolicy::magcache) {
    require(std::isfinite(t) && t > 0.0 && t <= 10.0, path + ".threshold",
            format_double(t) + " is out of range (expected a number in (0, 10])");
  }
  check_int(c.cache_interval, 1, 1000, path + ".cache_interval");
  check_int(c.disable_cache_before_step, 0, 10000, path + ".disable_cache_before_step");
  check_int(c.max_order, 0, 8, path + ".max_order");
  check_int(c.max_skip_steps, 1, 1000, path + ".max_skip_steps");
  require(c.retention_ratio >= 0.0 && c.retention_ratio <= 1.0, path + ".retention_ratio",
          format_double(c.retention_ratio) + " is out of range (expected a number in [0, 1])");
  for (std::size_t i = 0; i < c.mag_ratios.size(); ++i) {
    const double r = c.mag_ratios[i];
    require(std::isfinite(r) && r > 0.0 && r <= 100.0, fmt::format("{}.mag_ratios[{}]", path, i),
            format_double(r) + " is out of range (expected a number in (0, 100])");
  }
  require(!(c.calibrate && !c.mag_ratios.empty()), path + ".calibrate",
          "calibrate measures the ratios: leave mag_ratios out");
  require(c.policy != CachePolicy::magcache || c.calibrate || !c.mag_ratios.empty(),
          path + ".mag_ratios",
          "required by the magcache policy (one ratio per step, calibrated for the "
          "checkpoint): measure them with calibrate: true (docs/models.md, \"Step "
          "caching\")");
}

FieldSpec step_cache_field() {
  return FieldSpec{
      "cache",
      [](Config& config, const Node& node, const std::string& path) {
        config.generation.cache = read_step_cache(node, path);
      },
      [](const Config& config, YAML::Emitter& out) {
        const StepCacheConfig& c = config.generation.cache;
        if (c.policy == CachePolicy::off) {
          out << "off";
          return;
        }
        out << YAML::BeginMap << YAML::Key << "policy" << YAML::Value << enum_name(c.policy);
        for (const auto& key : cache_keys(c.policy)) {
          out << YAML::Key << key.name << YAML::Value;
          key.write(c, out);
        }
        out << YAML::EndMap;
      },
      [](const Config& config) { return config.generation.cache.policy != CachePolicy::off; },
      [](const Config& config, const std::string& path) {
        check_step_cache(config.generation.cache, path);
      }};
}

}  // namespace omnidp::config_schema

#include "omnidp/config/numerics.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <array>

#include "omnidp/common/version.hpp"

namespace omnidp {
namespace {

// Canonical key order; also the order describe_difference lists keys in.
constexpr std::array<std::string_view, 12> kKeys = {
    "dtype",  "device", "strict", "attention", "kernels",   "quantization",
    "layout", "vae",    "cache",  "lora",      "lora_line", "software"};

// A key that rows written before it existed lack reads as its value then: every group was one
// rank (the layouts came with their key).
constexpr std::string_view kLayoutKey = "layout";
constexpr std::string_view kSingleRankLayout = "tp1,sp1,cfg1";
// The VAE's decode (model.vae_tiling) is written only when tiled: a profile without the key,
// the rows before it existed included, decoded untiled.
constexpr std::string_view kVaeKey = "vae";
constexpr std::string_view kUntiledVae = "untiled";
// The step cache (generation.cache) is written only when one is on: a profile without the key,
// the rows before it existed included, computed every forward.
constexpr std::string_view kCacheKey = "cache";
constexpr std::string_view kNoCache = "off";
// LoRA adapters (model.lora: `lora`; a manifest line's: `lora_line`) are written only when
// there are some: a profile without the key, the rows before it existed included, had none.
constexpr std::string_view kLoraKey = "lora";
constexpr std::string_view kLineLoraKey = "lora_line";
constexpr std::string_view kNoLora = "none";
// A cache set by the request's manifest line.
constexpr std::string_view kLinePrefix = "line:";

std::string clean(std::string_view value) {
  std::string out(value);
  std::replace(out.begin(), out.end(), ';', ',');
  std::replace(out.begin(), out.end(), '=', ',');
  return out;
}

std::size_t key_rank(const std::string& key) {
  const auto it = std::find(kKeys.begin(), kKeys.end(), key);
  return static_cast<std::size_t>(it - kKeys.begin());  // unknown keys after the known ones
}

// Keys of either map, canonical ones first in their order, then the others sorted.
std::vector<std::string> all_keys(const std::map<std::string, std::string>& a,
                                  const std::map<std::string, std::string>& b) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : a) keys.push_back(k);
  for (const auto& [k, v] : b) {
    if (!a.contains(k)) keys.push_back(k);
  }
  std::stable_sort(keys.begin(), keys.end(), [](const std::string& x, const std::string& y) {
    const auto rx = key_rank(x);
    const auto ry = key_rank(y);
    return rx != ry ? rx < ry : x < y;
  });
  return keys;
}

std::string value_of(const std::map<std::string, std::string>& m, const std::string& key) {
  const auto it = m.find(key);
  if (it != m.end()) {
    if (key == kCacheKey && it->second.starts_with(kLinePrefix)) {
      return it->second.substr(kLinePrefix.size());
    }
    return it->second;
  }
  if (key == kLayoutKey) return std::string(kSingleRankLayout);
  if (key == kVaeKey) return std::string(kUntiledVae);
  if (key == kLoraKey || key == kLineLoraKey) return std::string(kNoLora);
  return key == kCacheKey ? std::string(kNoCache) : std::string();
}

}  // namespace

std::string numerics_profile(const Config& config, const std::optional<StepCacheConfig>& line_cache,
                             const std::vector<LoraAdapter>& line_lora) {
  return numerics_profile(config, std::string(version()) + " (git " + git_revision() + ")",
                          line_cache, line_lora);
}

std::string numerics_profile(const Config& config, std::string_view software,
                             const std::optional<StepCacheConfig>& line_cache,
                             const std::vector<LoraAdapter>& line_lora) {
  const ModelConfig& m = config.model;
  std::string out;
  out += "dtype=";
  out += to_string(m.dtype);
  out += ";device=";
  out += to_string(m.device);
  out += ";strict=";
  out += config.determinism.strict ? "true" : "false";
  out += ";attention=";
  out += to_string(m.attention);
  out += ";kernels=";
  out += m.fused_kernels ? "fused" : "eager";
  out += ";quantization=";
  out += to_string(m.quantization);
  // A group's layout changes the bytes (other reduction orders; CFG as two forwards instead of
  // a batch of 2); the number of replicas does not (each request runs on one group).
  const auto& p = config.parallel;
  out += fmt::format(";layout=tp{},sp{},cfg{}", p.tensor_parallel_size, p.sequence_parallel_size,
                     p.cfg_parallel_size);
  if (m.vae_tiling) out += ";vae=tiled";
  // A step cache skips forwards and so changes the bytes (docs/models.md, "Step caching").
  if (line_cache) {
    out += ";cache=";
    out += kLinePrefix;
    out += clean(describe_cache(*line_cache));
  } else if (config.generation.cache.policy != CachePolicy::off) {
    out += ";cache=";
    out += clean(describe_cache(config.generation.cache));
  }
  // Adapters change the weights and so the bytes (docs/models.md, "LoRA").
  if (!m.lora.empty()) {
    out += ";lora=";
    out += clean(describe_lora(m.lora));
  }
  if (!line_lora.empty()) {
    out += ";lora_line=";
    out += clean(describe_lora(line_lora));
  }
  out += ";software=";
  out += clean(software);
  return out;
}

std::map<std::string, std::string> parse_numerics(std::string_view profile) {
  std::map<std::string, std::string> out;
  while (!profile.empty()) {
    const auto end = profile.find(';');
    const std::string_view item = profile.substr(0, end);
    const auto eq = item.find('=');
    if (!item.empty()) {
      out[std::string(item.substr(0, eq))] =
          eq == std::string_view::npos ? std::string() : std::string(item.substr(eq + 1));
    }
    if (end == std::string_view::npos) break;
    profile.remove_prefix(end + 1);
  }
  return out;
}

bool cache_from_line(std::string_view profile) {
  const auto m = parse_numerics(profile);
  const auto it = m.find(std::string(kCacheKey));
  return it != m.end() && it->second.starts_with(kLinePrefix);
}

NumericsDifference compare_numerics(std::string_view a, std::string_view b) {
  NumericsDifference d;
  if (a == b) return d;
  if (a.empty() || b.empty()) {
    d.unknown = true;
    return d;
  }
  const auto ma = parse_numerics(a);
  const auto mb = parse_numerics(b);
  for (const auto& key : all_keys(ma, mb)) {
    if (value_of(ma, key) == value_of(mb, key)) continue;
    if (key == kSoftwareKey) {
      d.software = true;
    } else {
      d.keys.push_back(key);
    }
  }
  std::sort(d.keys.begin(), d.keys.end());
  return d;
}

std::string describe_difference(std::string_view a, std::string_view b) {
  if (a == b) return "";
  if (a.empty()) return "unknown profile -> " + std::string(b);
  if (b.empty()) return std::string(a) + " -> unknown profile";
  const auto ma = parse_numerics(a);
  const auto mb = parse_numerics(b);
  std::string out;
  for (const auto& key : all_keys(ma, mb)) {
    const std::string va = value_of(ma, key);
    const std::string vb = value_of(mb, key);
    if (va == vb) continue;
    if (!out.empty()) out += ", ";
    out += key + " (" + va + " -> " + vb + ")";
  }
  return out;
}

}  // namespace omnidp

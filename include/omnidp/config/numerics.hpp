#pragma once
// The numerics profile of a run (docs/results.md, "The numerics profile"): the settings that change a
// video's bytes without changing its request (so not part of the input key). Every /requests
// row records the profile that made it, as one canonical string:
//
//   dtype=bf16;device=cuda;strict=true;attention=cudnn;kernels=fused;quantization=none;
//   layout=tp1,sp1,cfg1;software=0.1.0 (git abc1234)
//
// (one line, no spaces around '=' or ';'), keys always in this order; `vae=tiled` follows
// `layout` when model.vae_tiling is on (a profile without it reads as vae=untiled);
// `cache=<describe_cache()>`
// stands before `software` when generation.cache is on, `cache=line:<describe_cache()>` when
// the request's manifest line set its own (even off). Values never hold ';' or '='. An empty
// string is the unknown profile (rows of files written before the column). `layout` is the
// replica group's tensor x sequence x CFG parallel sizes (they change the bytes; the replica
// count does not); a row written before that key reads as tp1,sp1,cfg1, and a profile without
// `cache` as cache=off.
// Plain value functions, thread-safe.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/config/config.hpp"

namespace omnidp {

// The profile key whose difference alone is a warning, not an error (docs/reliability.md).
inline constexpr std::string_view kSoftwareKey = "software";

// The canonical profile of `config` with this build's software version (`quantization` is
// model.quantization: none | fp8); with `line_cache`, that of a request whose manifest line sets
// its own step cache (Request::cache).
// With `line_lora`, the adapters of the request's manifest line (Request::lora: lora_line=...).
[[nodiscard]] std::string numerics_profile(const Config& config,
                                           const std::optional<StepCacheConfig>& line_cache = {},
                                           const std::vector<LoraAdapter>& line_lora = {});
// The same from explicit values: `software` is e.g. "0.1.0 (git abc1234)"; ';' and '=' in it
// become ','.
[[nodiscard]] std::string numerics_profile(const Config& config, std::string_view software,
                                           const std::optional<StepCacheConfig>& line_cache = {},
                                           const std::vector<LoraAdapter>& line_lora = {});

// Whether the profile's step cache came from the request's manifest line (cache=line:...):
// the input key then pins it, so the resume check leaves it to the key. compare_numerics and
// describe_difference compare the cache itself, wherever it was set.
[[nodiscard]] bool cache_from_line(std::string_view profile);

// key -> value of a canonical (or any "k=v;k=v") string; "" gives an empty map. Items without
// '=' are kept as a key with an empty value.
[[nodiscard]] std::map<std::string, std::string> parse_numerics(std::string_view profile);

// How two profiles differ.
struct NumericsDifference {
  bool unknown = false;           // one of them is "" (unknown) and the other is not
  std::vector<std::string> keys;  // keys whose values differ (missing = ""), sorted,
                                  // without kSoftwareKey
  bool software = false;          // the software version differs
  // Bytes may differ for a known reason: unknown, or a key other than the software differs.
  [[nodiscard]] bool numerics() const noexcept { return unknown || !keys.empty(); }
  [[nodiscard]] bool any() const noexcept { return numerics() || software; }
};
[[nodiscard]] NumericsDifference compare_numerics(std::string_view a, std::string_view b);

// "dtype (fp32 -> bf16), strict (true -> false)": every differing key (software too) with a's
// and b's values, in canonical order; "unknown profile -> <b>" (or the reverse) when one side is
// unknown; "" when equal.
[[nodiscard]] std::string describe_difference(std::string_view a, std::string_view b);

}  // namespace omnidp

#pragma once
// The one reader of the JSON files of a model snapshot (config.json, scheduler_config.json,
// model_index.json, tokenizer files, checkpoint indexes). Torch-free (in omnidp::model_api),
// so the model table's snapshot facts use it too. Every fault is a WeightsError naming the
// file: a snapshot file is part of the weights, and a bad one stops the job before it runs
// (docs/models.md, "Loading a snapshot"). Thread-safe (pure functions).

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>

#include "omnidp/common/error.hpp"

namespace omnidp::models {

// Reads and parses a JSON file. Throws WeightsError(path, "cannot open JSON file" |
// "cannot read JSON file" | "invalid JSON: <parser message>").
[[nodiscard]] nlohmann::json read_json(const std::filesystem::path& path);

// read_json of a file whose value must be an object: also WeightsError(path, "not a JSON object").
[[nodiscard]] nlohmann::json read_json_object(const std::filesystem::path& path);

// Parses `text` (a config already in memory) as an object; the faults are read_json_object's,
// with `origin` in place of the file.
[[nodiscard]] nlohmann::json parse_json_object(std::string_view text, const std::string& origin);

// The value of an optional key: `fallback` when absent or null; a value of another type (an
// integer key given a fraction, a number given a string, ...) is WeightsError(origin, "config
// key '<key>': <reason>"). The one reader of typed snapshot config keys.
template <typename T>
[[nodiscard]] T config_value(const nlohmann::json& j, const char* key, T fallback,
                             const std::string& origin) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  const auto fail = [&](const std::string& reason) -> T {
    throw WeightsError(origin, std::string("config key '") + key + "': " + reason);
  };
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!it->is_number_integer()) return fail("must be an integer, got " + it->dump());
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) return fail("must be a number, got " + it->dump());
  }
  try {
    return it->template get<T>();
  } catch (const nlohmann::json::exception& e) {
    return fail(e.what());
  }
}

}  // namespace omnidp::models

#pragma once
// Small readers of a Diffusers snapshot's JSON configs for model registrations' `describe`
// hooks (models/model_table.hpp): what a model knows of a snapshot without loading weights.
// Torch-free; every function is thread-safe and throws WeightsError naming the file.

#include <filesystem>
#include <optional>
#include <string>

#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {

// The config file of a component folder: config.json, else `alt_name` (what diffusers'
// save_pretrained writes for guiders and schedulers); nullopt when neither exists.
[[nodiscard]] std::optional<std::filesystem::path> component_file(const std::filesystem::path& folder,
                                                                  const char* alt_name);
// `key` of a JSON object file as a finite number accepted by `check` ("" = valid, else the
// reason); nullopt when the key is absent or null.
[[nodiscard]] std::optional<double> snapshot_number(const std::filesystem::path& file,
                                                    const char* key, std::string (*check)(double));
// `key` of a JSON object file as a string; "" when absent.
[[nodiscard]] std::string snapshot_string(const std::filesystem::path& file, const char* key);

// The snapshot's scheduler/ shift as d.flow_shift (origin "snapshot scheduler/<file>"), unless
// the YAML sets generation.flow_shift or the snapshot has none: a UniPCMultistepScheduler's
// `flow_shift`, a FlowMatchEulerDiscreteScheduler's `shift`, `other_key` for another class or
// a config without one. Both models' registrations (snapshot_defaults) read it here.
void snapshot_flow_shift(const Config& config, GenerationDefaults& d, const char* other_key);

}  // namespace omnidp::models

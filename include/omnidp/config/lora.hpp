#pragma once
// LoRA adapters as a job or a request names them (docs/models.md, "LoRA"): `model.lora` in the
// YAML (every request of the job) and a manifest line's "lora" (that request, on top of the
// job's). One rule set for both: a list whose items are a path, or a map {path, scale,
// expert}. Plain values; the file itself is read by the model (models/weights/lora_file.hpp).

#include <optional>
#include <string>
#include <vector>

namespace omnidp {

// The expert of a two-expert checkpoint (Wan2.2-A14B) an adapter goes into: both, the
// high-noise one (`transformer`) or the low-noise one (`transformer_2`, diffusers'
// load_into_transformer_2).
enum class LoraExpert { all, high_noise, low_noise };
[[nodiscard]] const char* to_string(LoraExpert expert) noexcept;

struct LoraAdapter {
  // A .safetensors file: in the YAML as written (relative paths against the working folder);
  // on a manifest line resolved against the manifest's folder.
  std::string path;
  // The adapter's strength (diffusers' set_adapters weight): a finite number in [-100, 100].
  double scale = 1.0;
  // Unset: on a two-expert model the expert the file name states (lora_expert_from_file_name),
  // else both; a one-expert model takes only unset or `all`.
  std::optional<LoraExpert> expert;
  // Hex SHA-256 of the file's bytes, filled where the file is read (rank 0's validation); part
  // of the input key and the numerics profile.
  std::string sha256;
  friend bool operator==(const LoraAdapter&, const LoraAdapter&) = default;
};

// A list of adapters written as YAML or JSON text (a manifest line's "lora" is JSON, which
// YAML's flow syntax reads). Faults are ConfigErrors whose path starts with `path`
// ("lora[1].scale"). An empty list is allowed (no adapter).
[[nodiscard]] std::vector<LoraAdapter> parse_lora_list(const std::string& text,
                                                       const std::string& path);

// The list as YAML flow text that parse_lora_list reads back to an equal list (sha256 aside).
[[nodiscard]] std::string lora_list_yaml(const std::vector<LoraAdapter>& adapters);

// The expert a file's name states, by its words (split at anything but letters and digits,
// case-insensitive): "high" or "highnoise" -> high_noise, "low" or "lownoise" -> low_noise;
// nullopt for neither or both (LightX2V's `..._HIGH_fp16.safetensors`, `high_noise_model.safetensors`).
[[nodiscard]] std::optional<LoraExpert> lora_expert_from_file_name(const std::string& path);

// The expert an adapter goes into on a model with (two_experts) or without two experts: its
// `expert`, else the one its file name states (two experts), else all.
[[nodiscard]] LoraExpert resolve_lora_expert(const LoraAdapter& adapter, bool two_experts);

// The rules across an adapter list and the model: a one-expert model takes no high_noise or
// low_noise; an explicit expert that contradicts the one the file name states (a HIGH file
// given to the low-noise expert) is refused. ConfigError at `path` ("model.lora[1].expert").
void check_lora_experts(const std::vector<LoraAdapter>& adapters, bool two_experts,
                        const std::string& path);

// "<first 12 hex of sha256>*<scale>[@<expert>]" per adapter, joined by '+': the input key's and
// the numerics profile's text of an adapter set. Never holds ';', '=' or ','.
[[nodiscard]] std::string describe_lora(const std::vector<LoraAdapter>& adapters);

}  // namespace omnidp

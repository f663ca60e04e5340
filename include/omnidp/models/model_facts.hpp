#pragma once
// What the job asks of the registered models (model_table.hpp) without loading one: a model's
// facts, its weights' identity, the generation defaults and where they came from, and the
// manifest rules that follow from them. Torch-free; reads at most a snapshot's JSON configs
// (and hashes its files for weights_identity). Thread-safe once the table is built.

#include <string>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/manifest.hpp"
#include "omnidp/models/model_info.hpp"

namespace omnidp {

// Facts of a registered model, without loading weights (reads at most a config.json of the
// snapshot: hunyuanvideo-1.5's transformer/config.json target_size). Throws ConfigError for
// unknown names, WeightsError for an unreadable config.
[[nodiscard]] ModelInfo describe_model(const ModelConfig& model);

// The defaults of the values a manifest line may leave out and a snapshot carries
// (docs/configuration.md "Generation defaults"): generation.guidance_scale / flow_shift when
// the YAML sets them; else, with model.path, the snapshot's guider/ guidance_scale
// (hunyuanvideo-1.5; config.json or guider_config.json) and scheduler/ shift
// (FlowMatchEulerDiscreteScheduler) or flow_shift (UniPCMultistepScheduler; config.json or
// scheduler_config.json); else the model's default. Reads those JSON files only, never
// weights. Throws ConfigError for an unknown model, WeightsError naming the file for a config
// that is unreadable or holds a bad value.
[[nodiscard]] GenerationDefaults resolve_generation_defaults(const Config& config);
// "guidance_scale 6 (snapshot guider/guider_config.json), flow_shift 5 (model default)".
[[nodiscard]] std::string describe_generation_defaults(const GenerationDefaults& defaults);
// to_yaml(config) followed by a comment line with describe_generation_defaults(): the
// effective configuration as run_job prints it and the results files store it.
[[nodiscard]] std::string effective_config_yaml(const Config& config);

// The "weights identity" part of the input key: "synthetic", "random:<seed>" for seeded
// weights, otherwise "snapshot-sha256:<hex>": digest_snapshot(model.path) over the bytes of
// every weight, config and tokenizer file (models/snapshot_digest.hpp; hashed once, then
// cached). Throws WeightsError if the snapshot is unreadable. omni-dp-batch calls it (through
// job_manifest_options) on rank 0, the coordinator, and in --validate-only / --dry-run.
[[nodiscard]] std::string weights_identity(const ModelConfig& model);

// The options every reader of a job's manifest uses: manifest_options(config,
// weights_identity(config.model)), with the model's size_multiple() so that a size the model
// would round is an error, and, for a model with image_size_target, the size_from_image hook
// (i2v lines without height/width take the model's bucket), the snapshot's one task
// (only_task), and guidance_scale / flow_shift defaults from resolve_generation_defaults().
// Throws as those do.
[[nodiscard]] ManifestOptions job_manifest_options(const Config& config);

}  // namespace omnidp

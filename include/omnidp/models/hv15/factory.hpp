#pragma once
// The registry's entry point for `hunyuanvideo-1.5`, torch-free so the registry stays light.
// Called once per working rank, on its worker thread.

#include <memory>

#include "omnidp/config/config.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {
class ModelTable;
}

namespace omnidp::models::hv15 {

// `hunyuanvideo-1.5` in the model table: 54 blocks of width 2048, no patching; its snapshot
// facts (transformer/config.json target_size, the one task of a pretrained snapshot from
// model_index.json or task_type) read without loading weights.
void register_hunyuanvideo15(ModelTable& table);

// A Diffusers snapshot folder (model.path: transformer/, vae/, guider/ and scheduler/ read
// unchanged; config.json or guider_config.json / scheduler_config.json) or,
// with `weights: random`, the real configuration (or the snapshot's configs when model.path is
// set) with seeded bf16-exact random weights (transformer: weights_seed, VAE: weights_seed + 1)
// and seeded random text conditioning for requests without embeddings. dtype/device from the
// config; determinism.strict turns on deterministic algorithms. Throws ConfigError,
// WeightsError, ModelError.
[[nodiscard]] std::unique_ptr<Pipeline> create_hunyuanvideo15_pipeline(const Config& config,
                                                                       const DeviceBinding& device);

}  // namespace omnidp::models::hv15

#pragma once
// The registry's entry point for `tiny-wan` and `wan2.2-ti2v-5b`, torch-free so the registry
// stays light (defined with the pipeline in src/models/wan/pipeline.cpp).
// Called once per working rank, on its worker thread.

#include <memory>

#include "omnidp/config/config.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {
class ModelTable;
}

namespace omnidp::models::wan {

// `wan2.2-ti2v-5b` (30 blocks of width 3072) and `tiny-wan` (2 of 128) in the model table,
// both patch (1, 2, 2) over the 4 x 16 x 16 VAE.
void register_wan_models(ModelTable& table);

// `tiny-wan`: the fixtures' tiny transformer + VAE configs (embedded) with seeded bf16-exact
// random weights (weights: random only). `wan2.2-ti2v-5b`: a Diffusers snapshot folder
// (model.path: model_index.json, transformer/, vae/, scheduler/) or, with `weights: random`,
// the real configuration (or the snapshot's configs when model.path is set) with seeded
// random weights (transformer: weights_seed, VAE: weights_seed + 1). dtype/device from the
// config; determinism.strict turns on deterministic algorithms. Throws ConfigError,
// WeightsError, ModelError.
[[nodiscard]] std::unique_ptr<Pipeline> create_wan_pipeline(const Config& config,
                                                            const DeviceBinding& device);

}  // namespace omnidp::models::wan

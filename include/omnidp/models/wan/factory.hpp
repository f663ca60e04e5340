#pragma once
// The registry's entry point for the Wan family (family.hpp: `wan`, the released names and the
// tiny ones), torch-free so the registry stays light.
// Called once per working rank, on its worker thread.

#include <memory>

#include "omnidp/config/config.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {
class ModelTable;
}

namespace omnidp::models::wan {

// Every name of wan_model_names() in the model table. Facts (widths, VAE factors, the task a
// checkpoint serves) come from the snapshot when model.path is set, else from the built-in
// layout; a released name is checked against the snapshot (resolve_wan_layout).
void register_wan_models(ModelTable& table);

// The pipeline of resolve_wan_layout(model.name, model.path, pretrained): a Diffusers snapshot
// folder (model_index.json, transformer/ [+ transformer_2/], vae/, scheduler/, text_encoder/,
// tokenizer/; every component checked before the first weights are read) or, with `weights:
// random`, the snapshot's or the built-in configuration with seeded random weights
// (transformer: weights_seed, VAE: + 1, text: + 2, the low-noise expert: + 3). Both experts
// are loaded and resident. dtype/device from the config; determinism.strict turns on
// deterministic algorithms. Throws ConfigError, WeightsError, ModelError.
[[nodiscard]] std::unique_ptr<Pipeline> create_wan_pipeline(const Config& config,
                                                            const DeviceBinding& device);

}  // namespace omnidp::models::wan

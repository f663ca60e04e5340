#pragma once
// The model registry: builds the Pipeline named by `model.name` (docs/models.md). The batch
// executable injects create_pipeline into the runtime as its PipelineFactory; the runtime
// itself never links model code.
//
// Called once per working rank, on that rank's worker thread.

#include <memory>
#include <string>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {

// Adds every built-in model (the omnidp_model() lines of src/models/registry/CMakeLists.txt)
// to model_table(), once per process; main() calls it before parsing the config.
void register_builtin_models();

// Builds the model of `config.model.name` on `device`. Throws ConfigError("model.name", "model
// 'X' is not available in this build") for names this build has no pipeline for, and whatever
// the pipeline's loading throws (WeightsError, ModelError, ...).
[[nodiscard]] std::unique_ptr<Pipeline> create_pipeline(const Config& config,
                                                        const DeviceBinding& device);

// The model names this build can create, in registry order.
[[nodiscard]] std::vector<std::string> available_pipelines();

}  // namespace omnidp::models

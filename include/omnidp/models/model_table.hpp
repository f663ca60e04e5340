#pragma once
// The model table (docs/models.md): one registration per model holds its name, its static facts
// (widths, depths, patch and VAE factors, the cost prior), what it reads of a snapshot without
// loading weights, and its factory. Config validation, describe_model(), the cost model and
// create_pipeline() all read this one table; adding a model is one file with its
// registration plus one line in CMake (docs/models.md, "Adding a model").
//
// Torch-free. Ownership: the table owns its registrations for the process's lifetime.
// Threading: registrations happen on the main thread before any actor starts (built-in models
// by models::register_builtin_models(), plugins by load_model_plugin()); lookups afterwards may
// run on any thread.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "omnidp/config/config.hpp"
#include "omnidp/models/cost_terms.hpp"
#include "omnidp/models/model_info.hpp"
#include "omnidp/models/pipeline.hpp"

namespace omnidp::models {

using CreatePipeline = std::function<std::unique_ptr<Pipeline>(const Config&, const DeviceBinding&)>;

struct ModelRegistration {
  std::string name;
  ModelInfo facts;          // facts.name is set to `name` on add()
  bool has_weights = true;  // false: `weights: pretrained` is refused (synthetic)
  // Snapshot facts read without loading weights (e.g. a config.json's target_size); may be empty.
  std::function<void(const ModelConfig&, ModelInfo&)> describe;
  // The snapshot's own generation values (guider/, scheduler/) for the keys the YAML leaves
  // unset, over the model defaults already in `defaults`; may be empty.
  std::function<void(const Config&, GenerationDefaults&)> snapshot_defaults;
  // The a-priori cost's coefficients from the facts (models/cost.hpp); empty: the generic
  // transformer prior (4 x layers x hidden, 24 x layers x hidden^2).
  std::function<CostCoefficients(const ModelInfo&)> cost;
  // A LoRA adapter checked against the transformer(s) without loading weights (its file read
  // and converted, every module and shape matched: models/weights/lora.hpp): "" when it fits,
  // else the reason. Rank 0 calls it for model.lora and each distinct manifest adapter before
  // any request runs. Empty: adapters are checked when they are fused (facts.lora needs it).
  std::function<std::string(const ModelConfig&, const LoraAdapter&)> lora_problem;
  // Builds the pipeline on a worker's thread; empty in a build without the model's code.
  CreatePipeline create;
  std::string origin = "built in";  // or the plugin's path
};

class ModelTable {
 public:
  ModelTable() = default;
  ModelTable(const ModelTable&) = delete;
  ModelTable& operator=(const ModelTable&) = delete;

  // Throws ConfigError("model.name", ...) for an empty or already registered name (naming both
  // origins).
  void add(ModelRegistration registration);
  // nullptr when no model of that name is registered.
  [[nodiscard]] const ModelRegistration* find(std::string_view name) const;
  // Registration order.
  [[nodiscard]] std::vector<std::string> names() const;
  [[nodiscard]] std::vector<ModelChoice> choices() const;
  // Moves every registration out (the table is empty afterwards).
  [[nodiscard]] std::vector<ModelRegistration> release();

 private:
  std::vector<std::unique_ptr<ModelRegistration>> entries_;
};

// The process's table; `synthetic` (the runtime's own test model) is always registered.
[[nodiscard]] ModelTable& model_table();

// validate_and_resolve(config, model_table().choices()).
void validate_config(Config& config);

// The process environment a configuration needs, set before any thread of the job starts:
// CUBLAS_WORKSPACE_CONFIG=:4096:8 under determinism.strict (cuBLAS's deterministic workspace),
// unless already set. Main thread only: glibc's setenv may move the environment under a
// concurrent getenv (rank 0's coordinator probes images with libjpeg, which reads it, while its
// worker loads the model: a segfault). apply_torch_settings (layers/torch_settings.hpp) calls it
// too, for the programs that call nothing earlier; after the main thread's call it changes nothing.
void set_process_environment(const Config& config);

}  // namespace omnidp::models

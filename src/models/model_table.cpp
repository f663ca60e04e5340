#include "omnidp/models/model_table.hpp"

#include <algorithm>
#include <cstdlib>

#include "omnidp/common/error.hpp"
#include "omnidp/models/synthetic.hpp"

namespace omnidp::models {

void ModelTable::add(ModelRegistration registration) {
  if (registration.name.empty())
    throw ConfigError("model.name",
                      "a model registration without a name (" + registration.origin + ")");
  if (const auto* existing = find(registration.name)) {
    throw ConfigError("model.name", "model '" + registration.name + "' is registered twice (" +
                                        existing->origin + ", then " + registration.origin + ")");
  }
  registration.facts.name = registration.name;
  entries_.push_back(std::make_unique<ModelRegistration>(std::move(registration)));
}

const ModelRegistration* ModelTable::find(std::string_view name) const {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e->name == name; });
  return it == entries_.end() ? nullptr : it->get();
}

std::vector<std::string> ModelTable::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e->name);
  return out;
}

std::vector<ModelChoice> ModelTable::choices() const {
  std::vector<ModelChoice> out;
  for (const auto& e : entries_) {
    const ModelRegistration* r = e.get();  // the table owns it for the process's lifetime
    out.push_back({r->name, r->has_weights,
                   [r](const ModelConfig& model) {
                     ModelInfo info = r->facts;
                     if (r->describe) r->describe(model, info);
                     return info.attention_heads;
                   },
                   r->facts.tensor_parallel, r->facts.fp8, r->facts.vae_tiling, r->facts.lora});
  }
  return out;
}

std::vector<ModelRegistration> ModelTable::release() {
  std::vector<ModelRegistration> out;
  for (auto& e : entries_) out.push_back(std::move(*e));
  entries_.clear();
  return out;
}

namespace {

// The synthetic model (no weights; models/synthetic.hpp): registered first, in every process.
void register_synthetic(ModelTable& table) {
  ModelRegistration r;
  r.name = "synthetic";
  r.facts = synthetic_facts();
  r.has_weights = false;
  r.create = [](const Config& config, const DeviceBinding& device) -> std::unique_ptr<Pipeline> {
    return std::make_unique<SyntheticPipeline>(config, device);
  };
  table.add(std::move(r));
}

}  // namespace

ModelTable& model_table() {
  static ModelTable table;
  static const bool registered = (register_synthetic(table), true);
  (void)registered;
  return table;
}

void validate_config(Config& config) { validate_and_resolve(config, model_table().choices()); }

void set_process_environment(const Config& config) {
  // Only when unset: a set value is the user's, and leaving it makes a later call (from
  // apply_torch_settings, beside other threads) change nothing.
  if (config.determinism.strict && std::getenv("CUBLAS_WORKSPACE_CONFIG") == nullptr) {
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  }
}

}  // namespace omnidp::models

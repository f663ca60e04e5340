// A model plugin for plugin_test: registers `test-plugin-model` (a one-colour video).
#include <memory>
#include <utility>

#include "omnidp/models/plugin.hpp"

namespace {

class OneColour final : public omnidp::Pipeline {
 public:
  omnidp::Video generate(const omnidp::Request& r, const omnidp::GenerateContext&) override {
    omnidp::Video v{r.num_frames, r.height, r.width, {}};
    v.data.assign(v.byte_size(), static_cast<std::uint8_t>(r.seed % 251));
    return v;
  }
  std::string model_name() const override { return "test-plugin-model"; }
  std::string device_name() const override { return "cpu"; }
};

void register_models(omnidp::models::ModelTable& table) {
  omnidp::models::ModelRegistration r;
  r.name = "test-plugin-model";
  r.has_weights = false;
  r.facts.hidden_size = 4;
  r.facts.num_layers = 3;
  r.cost = [](const omnidp::ModelInfo& info) {
    return omnidp::CostCoefficients{1.0, static_cast<double>(info.num_layers)};
  };
  r.create = [](const omnidp::Config&,
                const omnidp::DeviceBinding&) -> std::unique_ptr<omnidp::Pipeline> {
    return std::make_unique<OneColour>();
  };
  table.add(std::move(r));
}

}  // namespace

OMNIDP_MODEL_PLUGIN(register_models)

#pragma once
// Parameter-holding building blocks of the text and vision encoders, allocated in a chosen
// dtype (no random-init pass, no float32 detour): a 7B-parameter encoder built for checkpoint
// loading costs its final size only. Linear, ParamSpec and freeze are the shared ones of
// models/layers (linear.hpp, placement.hpp); Embedding is the encoders' own. Parameter names
// are torch.nn's (`weight`, `bias`), so checkpoint names match. Seeded weights come from
// init_random_weights (weights/state_dict.hpp).
// Not thread-safe with respect to one module; forward() is a pure function of its inputs.

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/linear.hpp"
#include "omnidp/models/layers/placement.hpp"
#include "omnidp/models/weights/state_dict.hpp"

namespace omnidp::models::text {

// Rows of `weight` [num, dim] selected by integer ids; uninitialised parameters.
class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(std::int64_t num_embeddings, std::int64_t dim, const ParamSpec& spec);
  [[nodiscard]] torch::Tensor forward(const torch::Tensor& ids) const;

  torch::Tensor weight;
};
TORCH_MODULE(Embedding);

// An encoder with seeded random weights, ready for inference: built in float32 on the CPU,
// init_random_weights(seed) (bf16-exact values), moved to `device` and `dtype`, frozen, in eval
// mode. Model is a module holder constructible from (options, ParamSpec).
template <typename Model, typename Options>
[[nodiscard]] Model random_encoder(const Options& options, std::uint64_t seed,
                                   torch::ScalarType dtype, torch::Device device) {
  // Built in its final dtype on the device: the values are rounded through bf16 either way.
  Model model(options, ParamSpec{dtype, device});
  init_random_weights(*model, seed);
  freeze(*model);
  model->eval();
  return model;
}

// The options of an encoder folder's config.json (Options::from_json(json, path); a
// WeightsError naming the file where it is unreadable or wrong).
template <typename Options>
[[nodiscard]] Options options_from_folder(const std::filesystem::path& dir) {
  const auto config_path = dir / "config.json";
  return Options::from_json(read_json(config_path), config_path.string());
}

// load_state_dict of `module` nested under the dotted `prefix` ("" for none, e.g.
// "vision_model." or "model.language_model."), so that the strict loader matches the
// checkpoint's names `prefix + name`.
void load_state_dict_under(const std::string& prefix,
                           const std::shared_ptr<torch::nn::Module>& module,
                           const Checkpoint& checkpoint, torch::ScalarType dtype,
                           torch::Device device, const LoadOptions& options = {});

}  // namespace omnidp::models::text

#include "omnidp/models/text/linear.hpp"

#include <vector>

namespace omnidp::models::text {

EmbeddingImpl::EmbeddingImpl(std::int64_t num_embeddings, std::int64_t dim, const ParamSpec& spec) {
  weight = register_parameter("weight", torch::empty({num_embeddings, dim}, spec.options()), false);
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids) const {
  return torch::embedding(weight, ids.to(torch::kLong));
}

void load_state_dict_under(const std::string& prefix,
                           const std::shared_ptr<torch::nn::Module>& module,
                           const Checkpoint& checkpoint, torch::ScalarType dtype,
                           torch::Device device, const LoadOptions& options) {
  std::shared_ptr<torch::nn::Module> root = module;
  std::vector<std::string> parts;  // "model.language_model." -> {model, language_model}
  for (std::size_t begin = 0, dot = prefix.find('.'); dot != std::string::npos;
       begin = dot + 1, dot = prefix.find('.', begin)) {
    parts.push_back(prefix.substr(begin, dot - begin));
  }
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    auto parent = std::make_shared<torch::nn::Module>();
    parent->register_module(*it, root);
    root = parent;
  }
  load_state_dict(*root, checkpoint, dtype, device, options);
}

}  // namespace omnidp::models::text

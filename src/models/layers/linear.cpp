#include "omnidp/models/layers/linear.hpp"

#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models {

LinearImpl::LinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias)
    : in_features_(in_features), out_features_(out_features), with_bias_(with_bias) {
  reset();
}

LinearImpl::LinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias,
                       const ParamSpec& spec)
    : in_features_(in_features),
      out_features_(out_features),
      with_bias_(with_bias),
      options_(spec.options()),
      requires_grad_(false) {
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", torch::zeros({out_features_, in_features_}, options_),
                              requires_grad_);
  if (with_bias_)
    bias = register_parameter("bias", torch::zeros({out_features_}, options_), requires_grad_);
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) const {
  return linear_bias(x, weight, bias);
}

std::shared_ptr<torch::nn::Module> register_container(torch::nn::Module& parent,
                                                      const std::string& name) {
  return parent.register_module(name, std::make_shared<torch::nn::Module>(name));
}

Linear register_linear(torch::nn::Module& parent, const std::string& name, std::int64_t in,
                       std::int64_t out) {
  return Linear(parent.register_module(name, Linear(in, out)));
}

}  // namespace omnidp::models

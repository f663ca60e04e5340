#include "omnidp/models/layers/linear.hpp"

#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models {

LinearImpl::LinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias)
    : in_features_(in_features), out_features_(out_features), with_bias_(with_bias) {
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", torch::zeros({out_features_, in_features_}));
  if (with_bias_) bias = register_parameter("bias", torch::zeros({out_features_}));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  return linear_bias(x, weight, bias);
}

}  // namespace omnidp::models

#include "omnidp/models/layers/tensor_shape.hpp"

namespace omnidp::models {

std::string shape_string(at::IntArrayRef shape, std::string_view separator) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += separator;
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace omnidp::models

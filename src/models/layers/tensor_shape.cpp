#include "omnidp/models/layers/tensor_shape.hpp"

#include <fmt/ranges.h>

namespace omnidp::models {

std::string shape_string(at::IntArrayRef shape, std::string_view separator) {
  return fmt::format("[{}]", fmt::join(shape, separator));
}

}  // namespace omnidp::models

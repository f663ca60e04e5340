#pragma once
// The one way tensor shapes are written in messages: "[2, 3, 4]" (the separator may differ,
// e.g. "," for the compact refcheck notes). Thread-safe (pure function).

#include <torch/torch.h>

#include <string>
#include <string_view>

namespace omnidp::models {

[[nodiscard]] std::string shape_string(at::IntArrayRef shape, std::string_view separator = ", ");

}  // namespace omnidp::models

#pragma once
// A tensor-parallel slice of a checkpoint tensor, and the plan that says which tensors a model
// holds a slice of (docs/models.md, "Tensor parallelism"). Plain data.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace omnidp::models {

// Part `index` of `parts` equal parts along `dim`.
struct TensorSlice {
  std::int64_t dim = 0;
  std::int64_t index = 0;
  std::int64_t parts = 1;
  friend bool operator==(const TensorSlice&, const TensorSlice&) = default;
};

// Which tensors a module holds only a slice of, by checkpoint name; nullopt (or an empty
// function): the whole tensor.
using ShardPlan = std::function<std::optional<TensorSlice>(const std::string&)>;

}  // namespace omnidp::models

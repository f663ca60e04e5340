#pragma once
// The rule for splitting a model's attention heads over a replica group, stated once for the
// config check and the models: tensor parallelism gives each rank heads / tensor_parallel_size
// heads, and Ulysses shards those over the sequence group. Pure, torch-free, any thread.

#include <cstdint>
#include <optional>
#include <string>

namespace omnidp {

struct HeadSplitError {
  std::string key;      // the YAML key to change: parallel.tensor_parallel_size or ...sequence...
  std::string message;  // "<n> does not divide the <h> attention heads of <who> (<why>)"
};

// nullopt where `tensor` divides `heads` and `sequence` divides heads / tensor (sizes of 1
// always do). `who` names the model in the message ("model 'tiny-wan'", "the Wan transformer").
[[nodiscard]] std::optional<HeadSplitError> head_split_error(std::int64_t heads, std::int64_t tensor,
                                                             std::int64_t sequence,
                                                             const std::string& who);

}  // namespace omnidp

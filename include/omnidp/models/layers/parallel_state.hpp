#pragma once
// The intra-request parallel axes a transformer runs over, bound to it once per request by its
// pipeline (from GenerateContext's groups) instead of being passed to every forward: the
// tensor group completes its parallel layers (bind_tensor_groups, layers/parallel_linear.hpp),
// the sequence group shards its video tokens (Ulysses, layers/ulysses.hpp). Every rank of a
// replica group binds its own groups; null axes are the single-rank model.

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "omnidp/collective/collective.hpp"
#include "omnidp/models/layers/tensor_parallel.hpp"

namespace omnidp::models {

struct ParallelState {
  Collective* tensor = nullptr;    // parallel.tensor_parallel_size > 1
  Collective* sequence = nullptr;  // parallel.sequence_parallel_size > 1
};

// Checks `state` against a model built for `shard` with `heads` attention heads, naming `who`:
// the tensor group must run that shard (check_tensor_group: ModelError) and both group sizes
// must split the heads (check_head_split: ConfigError). Then binds the tensor group to every
// layer under `model` and returns the state for the model to keep.
[[nodiscard]] ParallelState bind_parallel_state(torch::nn::Module& model, const TensorShard& shard,
                                                std::int64_t heads, const ParallelState& state,
                                                const std::string& who);

}  // namespace omnidp::models

#include "omnidp/models/layers/parallel_state.hpp"

#include "omnidp/models/layers/parallel_linear.hpp"
#include "omnidp/models/layers/ulysses.hpp"

namespace omnidp::models {

ParallelState bind_parallel_state(torch::nn::Module& model, const TensorShard& shard,
                                  std::int64_t heads, const ParallelState& state,
                                  const std::string& who) {
  check_tensor_group(shard, state.tensor, who);
  check_head_split(heads, shard.size, state.sequence != nullptr ? state.sequence->size() : 1, who);
  bind_tensor_groups(model, state.tensor);
  return state;
}

}  // namespace omnidp::models

#include "omnidp/config/head_split.hpp"

namespace omnidp {

std::optional<HeadSplitError> head_split_error(std::int64_t heads, std::int64_t tensor,
                                               std::int64_t sequence, const std::string& who) {
  const auto text = [](std::int64_t v) { return std::to_string(v); };
  if (tensor > 1 && (heads < 1 || heads % tensor != 0)) {
    return HeadSplitError{
        "parallel.tensor_parallel_size",
        text(tensor) + " does not divide the " + text(heads) + " attention heads of " + who +
            " (tensor parallelism splits the heads: use a divisor of " + text(heads) + ")"};
  }
  if (sequence <= 1) return std::nullopt;
  if (tensor <= 1 && (heads < 1 || heads % sequence != 0)) {
    return HeadSplitError{"parallel.sequence_parallel_size",
                          text(sequence) + " does not divide the " + text(heads) +
                              " attention heads of " + who +
                              " (Ulysses shards the heads over the sequence group: use a divisor "
                              "of " +
                              text(heads) + ")"};
  }
  if (tensor > 1 && (heads / tensor) % sequence != 0) {
    return HeadSplitError{"parallel.sequence_parallel_size",
                          text(sequence) + " does not divide the " + text(heads / tensor) +
                              " attention heads of each tensor shard of " + who + " (" + text(heads) +
                              " heads over tensor_parallel_size " + text(tensor) + ")"};
  }
  return std::nullopt;
}

}  // namespace omnidp

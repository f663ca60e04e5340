#include "omnidp/config/head_split.hpp"

#include <fmt/format.h>

namespace omnidp {

std::optional<HeadSplitError> head_split_error(std::int64_t heads, std::int64_t tensor,
                                               std::int64_t sequence, const std::string& who) {
  const auto error = [&](const char* key, std::int64_t size, std::int64_t of_heads,
                         const std::string& whose, const std::string& why) {
    return HeadSplitError{key, fmt::format("{} does not divide the {} attention heads of {} ({})",
                                           size, of_heads, whose, why)};
  };
  if (tensor > 1 && (heads < 1 || heads % tensor != 0)) {
    return error("parallel.tensor_parallel_size", tensor, heads, who,
                 fmt::format("tensor parallelism splits the heads: use a divisor of {}", heads));
  }
  if (sequence <= 1) return std::nullopt;
  if (tensor <= 1 && (heads < 1 || heads % sequence != 0)) {
    return error(
        "parallel.sequence_parallel_size", sequence, heads, who,
        fmt::format("Ulysses shards the heads over the sequence group: use a divisor of {}", heads));
  }
  if (tensor > 1 && (heads / tensor) % sequence != 0) {
    return error("parallel.sequence_parallel_size", sequence, heads / tensor,
                 "each tensor shard of " + who,
                 fmt::format("{} heads over tensor_parallel_size {}", heads, tensor));
  }
  return std::nullopt;
}

}  // namespace omnidp

#include "omnidp/runtime/collective.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "omnidp/common/error.hpp"

namespace omnidp::runtime {

CollectiveBackend choose_collective_backend(CollectiveBackend requested, bool cuda,
                                            bool distinct_devices, bool nccl_built,
                                            const std::string& group_name) {
  if (requested == CollectiveBackend::mpi) return requested;
  const bool fits = cuda && distinct_devices && nccl_built;
  if (requested == CollectiveBackend::automatic) {
    return fits ? CollectiveBackend::nccl : CollectiveBackend::mpi;
  }
  if (!fits) {
    const std::string why = !cuda ? "it runs on the CPU"
                            : !distinct_devices
                                ? "two of its ranks share a GPU (NCCL refuses that; use mpi)"
                                : "this build has no NCCL";
    throw ConfigError("parallel.collective_backend", "nccl cannot serve " + group_name + ": " + why);
  }
  return requested;
}

std::string replica_group_name(int replica, const std::vector<int>& world_ranks) {
  return fmt::format("replica group {} (world ranks {})", replica, fmt::join(world_ranks, ","));
}

}  // namespace omnidp::runtime

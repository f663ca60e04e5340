#pragma once
// The runtime's side of the replica-group collectives (collective/collective.hpp holds the
// interface and the in-process backend): which backend a group gets, and the groups' names.
// The backends: MPI (runtime/collective_mpi.hpp) and NCCL (runtime/collective_nccl.hpp).

#include <string>
#include <vector>

#include "omnidp/collective/collective.hpp"
#include "omnidp/config/config.hpp"

namespace omnidp::runtime {

// The backend of a replica group's collectives (parallel.collective_backend): auto is NCCL
// when the group runs on CUDA devices that are all distinct and the build has NCCL, else MPI
// (two ranks on one GPU: NCCL refuses them). nccl on a CPU group, on a group that shares a GPU
// or in a build without NCCL is a ConfigError naming the group. Never returns automatic.
[[nodiscard]] CollectiveBackend choose_collective_backend(CollectiveBackend requested, bool cuda,
                                                          bool distinct_devices, bool nccl_built,
                                                          const std::string& group_name);

// "replica group <k> (world ranks a,b,...)".
[[nodiscard]] std::string replica_group_name(int replica, const std::vector<int>& world_ranks);

}  // namespace omnidp::runtime

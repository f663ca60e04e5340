#pragma once
// The NCCL backend of Collective (runtime/collective.hpp): CUDA device memory, on the legacy
// default stream (the one libtorch's kernels use unless a stream is set), so a collective is
// ordered after the kernels that produced its input and before those that read its output.
// Compiled only where the CUDA libtorch install has NCCL (CMake: OMNIDP_WITH_NCCL); elsewhere
// make_nccl_collective throws ConfigError. NCCL refuses two ranks of one communicator on one
// GPU: parallel.collective_backend auto picks MPI for such a group (docs/runtime.md).

#include <memory>
#include <string>

#include "omnidp/runtime/collective.hpp"
#include "omnidp/runtime/mpi.hpp"

namespace omnidp::runtime {

// True in a build with the NCCL backend.
[[nodiscard]] bool nccl_built() noexcept;

// Every rank of `comm` (the group's ranks) calls it together: rank 0 makes the ncclUniqueId,
// MPI_Bcast sends it over `comm`, then ncclCommInitRank on CUDA device `cuda_device`. NCCL
// failures throw RuntimeError naming the call, the group and the rank.
[[nodiscard]] std::unique_ptr<Collective> make_nccl_collective(const Communicator& comm,
                                                               const std::string& group_name,
                                                               int cuda_device);

}  // namespace omnidp::runtime

// The build without NCCL (the CPU build): the NCCL backend is absent.
#include "omnidp/common/error.hpp"
#include "omnidp/runtime/collective_nccl.hpp"

namespace omnidp::runtime {

bool nccl_built() noexcept { return false; }

std::unique_ptr<Collective> make_nccl_collective(const Communicator& /*comm*/,
                                                 const std::string& group_name, int /*cuda_device*/) {
  throw ConfigError("parallel.collective_backend",
                    "nccl requested for " + group_name +
                        ", but this build has no NCCL (use mpi, or build against a CUDA libtorch "
                        "with NCCL: docs/runtime.md)");
}

}  // namespace omnidp::runtime

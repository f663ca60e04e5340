// Builds without the CUDA kernels (no CUDA compiler or a CPU libtorch): callers take the
// libtorch path.
#include "omnidp/models/layers/cuda_kernels.hpp"

namespace omnidp::models {

const CudaKernels* cuda_kernels() noexcept { return nullptr; }

double cuda_peak_allocated_gib() { return -1.0; }

void cuda_reset_peak_memory() {}

}  // namespace omnidp::models

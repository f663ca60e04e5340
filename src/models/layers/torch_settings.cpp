#include "omnidp/models/layers/torch_settings.hpp"

#include <ATen/Context.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "omnidp/models/layers/attention.hpp"
#include "omnidp/models/layers/fused.hpp"
#include "omnidp/models/model_table.hpp"

namespace omnidp::models {

void apply_torch_settings(const Config& config) {
  if (config.determinism.strict) {
    // cuBLAS needs a fixed workspace for deterministic results, set before its first use. The
    // executables set it on their main thread first: then this changes nothing.
    set_process_environment(config);
    at::globalContext().setDeterministicAlgorithms(true, false);
    at::globalContext().setDeterministicCuDNN(true);
    at::globalContext().setBenchmarkCuDNN(false);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
    // Deterministic mode also fills every new tensor with NaN (a guard against reading
    // uninitialised memory): one extra write of each intermediate, most of strict mode's cost
    // on the GPU. Every kernel here writes its whole output, and a read of uninitialised memory
    // would show as repeats with different hashes, which the benchmarks check.
    at::globalContext().setDeterministicFillUninitializedMemory(false);
#endif
  } else {
    // No cuDNN autotuning either: on the H200 it left a Wan request's steady time unchanged
    // (4.22 s both ways) and made the first request seconds slower (docs/performance.md).
    at::globalContext().setDeterministicAlgorithms(false, false);
    at::globalContext().setDeterministicCuDNN(false);
    at::globalContext().setBenchmarkCuDNN(false);
  }
  set_attention_backend(parse_attention_backend(to_string(config.model.attention)));
  set_fused_elementwise(config.model.fused_kernels);
  if (config.model.torch_threads > 0) torch::set_num_threads(config.model.torch_threads);
}

}  // namespace omnidp::models

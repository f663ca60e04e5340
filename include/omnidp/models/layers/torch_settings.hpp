#pragma once
// The process-wide libtorch settings a model configuration asks for, applied in one place by
// every pipeline factory before it builds its modules: determinism.strict (deterministic
// algorithms without their NaN fill of new tensors, deterministic cuDNN, a fixed cuBLAS
// workspace; the cuDNN attention kernel stays usable, layers/attention.hpp; otherwise
// libtorch's defaults; cuDNN autotuning off in both), model.attention (the CUDA SDPA kernels),
// model.fused_kernels (set_fused_elementwise) and model.torch_threads. Call on the thread that
// will run the model, before its first CUDA call (cuBLAS reads its workspace setting once).
// Not thread-safe.

#include "omnidp/config/config.hpp"

namespace omnidp::models {

void apply_torch_settings(const Config& config);

}  // namespace omnidp::models

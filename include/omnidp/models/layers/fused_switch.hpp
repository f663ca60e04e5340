#pragma once
// The process-wide switch between the fused elementwise kernels (fused.hpp, the rotary
// embedding of rope.hpp) and the reference's eager expressions. Thread-safe (an atomic).

namespace omnidp::models {

// Process-wide switch, default on. Off: every function below, the models' rotary embeddings
// and the Wan timestep grouping take the reference's eager expressions, kernel for kernel
// (the "Diffusers-equivalent eager" baseline of the benchmarks). Set before running models.
void set_fused_elementwise(bool on) noexcept;
[[nodiscard]] bool fused_elementwise() noexcept;

}  // namespace omnidp::models

#pragma once
// The dense bf16 peak of a GPU, for the MFU figures (docs/performance.md, "MFU"). Torch-free,
// thread-safe (an immutable table).

#include <optional>
#include <string>
#include <string_view>

#include "omnidp/config/config.hpp"

namespace omnidp {

// A GPU's peak and where it came from.
struct PeakFlops {
  double tflops = 0.0;  // dense bf16 TFLOP/s of one GPU (no sparsity)
  std::string source;   // "runtime.peak_tflops" or "device table (NVIDIA H200)"
  friend bool operator==(const PeakFlops&, const PeakFlops&) = default;
};

// The dense bf16 peak of a CUDA device name as cudaGetDeviceProperties reports it ("NVIDIA
// H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", ...), from NVIDIA's datasheets;
// nullopt for a name the table does not hold (never guessed from a similar name).
[[nodiscard]] std::optional<double> device_peak_tflops(std::string_view cuda_name);
// The CUDA name inside a device label "cuda:3 (NVIDIA H200)" (Pipeline::device_name(), the
// rows' `device`); "" for "cpu" and other labels without one.
[[nodiscard]] std::string cuda_device_name(std::string_view device_label);
// The peak a run uses for a device label: runtime.peak_tflops when set, else the table's for
// the label's CUDA name, else nullopt (CPU, an unknown GPU: no MFU is reported).
[[nodiscard]] std::optional<PeakFlops> resolve_peak(const RuntimeConfig& runtime,
                                                    std::string_view device_label);

}  // namespace omnidp

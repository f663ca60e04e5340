#include "omnidp/config/peak_flops.hpp"

#include <array>

namespace omnidp {
namespace {

struct PeakEntry {
  std::string_view name;  // the CUDA device name
  bool prefix;            // true: every name that starts with `name`
  double tflops;
};

// Dense bf16 Tensor Core TFLOP/s (the datasheets' figures "with sparsity" halved): NVIDIA H200
// and H100 datasheets (SXM 989.4 = 1979 / 2, H100 PCIe 756 = 1513 / 2), H800 SXM (989.4),
// GH200 Grace Hopper (989.4), A100 (312, SXM and PCIe, 40 and 80 GB), L40S (362.05 = 733 / 2),
// HGX B200 (2250 = 4.5 PFLOP/s / 2). NVL and other variants are left out: unknown, not guessed.
constexpr std::array<PeakEntry, 12> kPeaks{{
    {"NVIDIA H200", false, 989.4},
    {"NVIDIA H100 80GB HBM3", false, 989.4},
    {"NVIDIA H100 SXM", false, 989.4},
    {"NVIDIA H100 PCIe", false, 756.0},
    {"NVIDIA H800", false, 989.4},
    {"NVIDIA GH200", true, 989.4},
    {"NVIDIA A100-SXM4-80GB", false, 312.0},
    {"NVIDIA A100-SXM4-40GB", false, 312.0},
    {"NVIDIA A100-PCIE-40GB", false, 312.0},
    {"NVIDIA A100 80GB PCIe", false, 312.0},
    {"NVIDIA L40S", false, 362.05},
    {"NVIDIA B200", false, 2250.0},
}};

bool matches(const PeakEntry& e, std::string_view name) {
  return e.prefix ? name.starts_with(e.name) : name == e.name;
}

}  // namespace

std::optional<double> device_peak_tflops(std::string_view cuda_name) {
  for (const auto& e : kPeaks) {
    if (matches(e, cuda_name)) return e.tflops;
  }
  return std::nullopt;
}

std::string cuda_device_name(std::string_view label) {
  if (!label.starts_with("cuda")) return "";
  const auto open = label.find(" (");
  if (open == std::string_view::npos || !label.ends_with(")")) return "";
  return std::string(label.substr(open + 2, label.size() - open - 3));
}

std::optional<PeakFlops> resolve_peak(const RuntimeConfig& runtime, std::string_view device_label) {
  if (runtime.peak_tflops) return PeakFlops{*runtime.peak_tflops, "runtime.peak_tflops"};
  const std::string name = cuda_device_name(device_label);
  if (name.empty()) return std::nullopt;
  if (const auto peak = device_peak_tflops(name)) {
    return PeakFlops{*peak, "device table (" + name + ")"};
  }
  return std::nullopt;
}

}  // namespace omnidp

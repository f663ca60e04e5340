#include "omnidp/config/peak_flops.hpp"

#include <gtest/gtest.h>

#include "omnidp/common/error.hpp"

namespace omnidp {
namespace {

TEST(PeakFlops, DenseBf16PeaksOfKnownGpus) {
  EXPECT_EQ(device_peak_tflops("NVIDIA H200"), 989.4);
  EXPECT_EQ(device_peak_tflops("NVIDIA H100 80GB HBM3"), 989.4);  // SXM
  EXPECT_EQ(device_peak_tflops("NVIDIA H100 PCIe"), 756.0);
  EXPECT_EQ(device_peak_tflops("NVIDIA H800"), 989.4);
  EXPECT_EQ(device_peak_tflops("NVIDIA A100-SXM4-80GB"), 312.0);
  EXPECT_EQ(device_peak_tflops("NVIDIA A100 80GB PCIe"), 312.0);
  EXPECT_EQ(device_peak_tflops("NVIDIA L40S"), 362.05);
  EXPECT_EQ(device_peak_tflops("NVIDIA GH200 480GB"), 989.4);
  EXPECT_EQ(device_peak_tflops("NVIDIA B200"), 2250.0);
}

TEST(PeakFlops, UnknownNamesAreNeverGuessed) {
  for (const char* name : {"NVIDIA H200 NVL", "NVIDIA H100 NVL", "NVIDIA GeForce RTX 4090", "",
                           "H200", "NVIDIA H2000"}) {
    EXPECT_FALSE(device_peak_tflops(name).has_value()) << name;
  }
}

TEST(PeakFlops, CudaNameOfADeviceLabel) {
  EXPECT_EQ(cuda_device_name("cuda:3 (NVIDIA H200)"), "NVIDIA H200");
  EXPECT_EQ(cuda_device_name("cuda:0 (NVIDIA A100-SXM4-80GB)"), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(cuda_device_name("cuda:0"), "");
  EXPECT_EQ(cuda_device_name("cpu"), "");
  EXPECT_EQ(cuda_device_name("cpu (NVIDIA H200)"), "");
}

TEST(PeakFlops, ConfigOverrideBeatsTheTable) {
  RuntimeConfig runtime;
  EXPECT_EQ(resolve_peak(runtime, "cuda:0 (NVIDIA H200)"),
            (PeakFlops{989.4, "device table (NVIDIA H200)"}));
  EXPECT_FALSE(resolve_peak(runtime, "cpu").has_value());
  EXPECT_FALSE(resolve_peak(runtime, "cuda:1 (NVIDIA GeForce RTX 4090)").has_value());
  EXPECT_FALSE(resolve_peak(runtime, "cuda:1").has_value());
  runtime.peak_tflops = 400.0;
  EXPECT_EQ(resolve_peak(runtime, "cuda:0 (NVIDIA H200)"),
            (PeakFlops{400.0, "runtime.peak_tflops"}));
  EXPECT_EQ(resolve_peak(runtime, "cpu"), (PeakFlops{400.0, "runtime.peak_tflops"}));
}

}  // namespace
}  // namespace omnidp

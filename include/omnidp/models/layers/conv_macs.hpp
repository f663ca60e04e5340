#pragma once
// Multiply-adds of a convolutional VAE's layers, for the analytic model FLOP counts
// (models/wan/flops.hpp, models/hv15/flops.hpp; docs/performance.md, "MFU"). Accumulated as
// doubles (the real sizes exceed 2^53 only far beyond any video). Plain value type.

#include <cstdint>

namespace omnidp::models {

struct ConvMacs {
  double total = 0.0;
  // A conv with kernel volume k from c_in to c_out channels over `outputs` output positions.
  void conv(double outputs, std::int64_t c_in, std::int64_t c_out, double k) {
    total += outputs * static_cast<double>(c_in) * static_cast<double>(c_out) * k;
  }
  // A residual block at f frames of p pixels: two 3x3x3 convs, a 1x1x1 shortcut when the widths
  // differ (Wan's WanResidualBlock, HunyuanVideo-1.5's VaeResnetBlock).
  void residual(double f, double p, std::int64_t in, std::int64_t out) {
    conv(f * p, in, out, 27.0);
    conv(f * p, out, out, 27.0);
    if (in != out) conv(f * p, in, out, 1.0);
  }
};

}  // namespace omnidp::models

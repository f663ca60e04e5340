#include "omnidp/models/schedulers/scheduler.hpp"

namespace omnidp::models {

// Built with -ffp-contract=off (src/models/schedulers/CMakeLists.txt): numpy rounds the
// product and the sum separately.
std::vector<double> numpy_linspace(double start, double stop, int num) {
  std::vector<double> out;
  if (num <= 0) return out;
  out.reserve(static_cast<std::size_t>(num));
  const int div = num - 1;
  const double delta = stop - start;
  const double step = div > 0 ? delta / div : delta;
  for (int i = 0; i < num; ++i) {
    const double y =
        step == 0.0 ? (static_cast<double>(i) / div) * delta : static_cast<double>(i) * step;
    out.push_back(y + start);
  }
  if (num > 1) out.back() = stop;
  return out;
}

}  // namespace omnidp::models

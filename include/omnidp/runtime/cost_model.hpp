#pragma once
// The coordinator's cost model: the a-priori cost (models/cost.hpp) calibrated online from
// measured generation times. seconds ~ alpha x (passes x tokens^2) + beta x (passes x tokens),
// fitted by least squares on relative error (each request weighs the same whatever its size):
//   minimise sum_i ((alpha q_i + beta l_i) / s_i - 1)^2   over observed (q_i, l_i, s_i).
// When the two features are (nearly) collinear, or the fit gives a negative coefficient, the
// prior's shape is kept and only its scale is fitted. Used for ordering and ETA. Not
// thread-safe (the coordinator's thread only).

#include <cstddef>

#include "omnidp/models/cost.hpp"

namespace omnidp::runtime {

class CostModel {
 public:
  explicit CostModel(const ModelInfo& info);

  // Zero for a request with an input error (it never runs).
  [[nodiscard]] CostFeatures features(const Request& request) const;
  [[nodiscard]] double prior(const CostFeatures& f) const { return prior_.apply(f); }
  // Estimated seconds: the calibrated fit; before the first observation, the prior in cost
  // units (the scale is then unknown, the order is not).
  [[nodiscard]] double estimate(const CostFeatures& f) const;
  void observe(const CostFeatures& f, double seconds);
  [[nodiscard]] bool calibrated() const noexcept { return observations_ > 0; }
  [[nodiscard]] std::size_t observations() const noexcept { return observations_; }
  // Seconds per feature (alpha, beta); equals the prior's before calibration.
  [[nodiscard]] const CostCoefficients& fitted() const noexcept { return fitted_; }

 private:
  void refit();

  ModelInfo info_;
  CostCoefficients prior_;
  CostCoefficients fitted_;
  std::size_t observations_ = 0;
  // Sums of the normal equations of the relative-error fit (x = q/s, y = l/s).
  double sxx_ = 0, sxy_ = 0, syy_ = 0, sx_ = 0, sy_ = 0;
  // Scale-only fit: p = prior/s.
  double sp_ = 0, spp_ = 0;
};

}  // namespace omnidp::runtime

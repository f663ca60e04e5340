#include "omnidp/runtime/cost_model.hpp"

#include <cmath>

namespace omnidp::runtime {

CostModel::CostModel(const ModelInfo& info)
    : info_(info), prior_(prior_coefficients(info)), fitted_(prior_) {}

CostFeatures CostModel::features(const Request& request) const {
  if (!request.input_error.empty() || !request.refused.empty())
    return {};  // recorded as failed without running
  return cost_features(info_, request);
}

double CostModel::estimate(const CostFeatures& f) const { return fitted_.apply(f); }

void CostModel::observe(const CostFeatures& f, double seconds) {
  if (!(seconds > 0.0) || !std::isfinite(seconds)) return;
  const double p = prior_.apply(f);
  if (!(p > 0.0)) return;
  const double x = f.quadratic / seconds;
  const double y = f.linear / seconds;
  sxx_ += x * x;
  sxy_ += x * y;
  syy_ += y * y;
  sx_ += x;
  sy_ += y;
  sp_ += p / seconds;
  spp_ += (p / seconds) * (p / seconds);
  ++observations_;
  refit();
}

void CostModel::refit() {
  // Scale-only fit of the prior: minimise sum (k p_i/s_i - 1)^2 -> k = sum(p/s) / sum((p/s)^2).
  const double k = sp_ / spp_;
  CostCoefficients scaled{k * prior_.a, k * prior_.b};
  if (observations_ >= 2) {
    // Two-parameter fit: [sxx sxy; sxy syy] [alpha beta]^T = [sx sy]^T.
    const double det = sxx_ * syy_ - sxy_ * sxy_;
    const double scale = sxx_ * syy_;
    if (scale > 0.0 && det > 1e-9 * scale) {
      const double alpha = (sx_ * syy_ - sy_ * sxy_) / det;
      const double beta = (sy_ * sxx_ - sx_ * sxy_) / det;
      if (alpha >= 0.0 && beta >= 0.0 && (alpha > 0.0 || beta > 0.0)) {
        fitted_ = CostCoefficients{alpha, beta};
        return;
      }
    }
  }
  fitted_ = scaled;
}

}  // namespace omnidp::runtime

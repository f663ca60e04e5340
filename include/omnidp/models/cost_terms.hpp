#pragma once
// The terms the a-priori cost is linear in and their coefficients (cost.hpp computes them; a
// model's registration in the model table may give its own coefficients). Plain values.

namespace omnidp {

// The two features the cost is linear in: passes x tokens^2 and passes x tokens.
struct CostFeatures {
  double quadratic = 0.0;  // passes x tokens^2
  double linear = 0.0;     // passes x tokens
};

struct CostCoefficients {
  double a = 0.0;  // per passes x tokens^2
  double b = 0.0;  // per passes x tokens
  [[nodiscard]] double apply(const CostFeatures& f) const noexcept {
    return a * f.quadratic + b * f.linear;
  }
};

}  // namespace omnidp

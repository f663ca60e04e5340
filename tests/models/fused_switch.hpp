#pragma once
// The process-wide fused-kernel switch (layers/fused.hpp) for one scope of a test.
#include "omnidp/models/layers/fused.hpp"

namespace omnidp::models::testing {

// Sets fused_elementwise() to `on` and restores the previous value at the end of the scope.
class FusedSwitch {
 public:
  explicit FusedSwitch(bool on) : before_(fused_elementwise()) { set_fused_elementwise(on); }
  ~FusedSwitch() { set_fused_elementwise(before_); }
  FusedSwitch(const FusedSwitch&) = delete;
  FusedSwitch& operator=(const FusedSwitch&) = delete;

 private:
  bool before_;
};

}  // namespace omnidp::models::testing

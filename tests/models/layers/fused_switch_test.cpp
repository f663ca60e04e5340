#include "omnidp/models/layers/fused_switch.hpp"

#include <gtest/gtest.h>

namespace omnidp::models {
namespace {

TEST(FusedSwitch, OnByDefaultAndSetForTheProcess) {
  EXPECT_TRUE(fused_elementwise());
  set_fused_elementwise(false);
  EXPECT_FALSE(fused_elementwise());
  set_fused_elementwise(true);
  EXPECT_TRUE(fused_elementwise());
}

}  // namespace
}  // namespace omnidp::models

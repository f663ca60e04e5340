#include "omnidp/common/format.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>

namespace omnidp {
namespace {

std::string printf_fixed(double value, int digits) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

TEST(Fixed, IsPrintfsFixedPoint) {
  EXPECT_EQ(fixed(3.14159, 2), "3.14");
  EXPECT_EQ(fixed(12.0, 1), "12.0");
  EXPECT_EQ(fixed(2.5, 0), "2");  // exact ties round to even, as printf does
  EXPECT_EQ(fixed(0.125, 2), "0.12");
  EXPECT_EQ(fixed(-0.0, 1), "-0.0");
  EXPECT_EQ(fixed(std::numeric_limits<double>::infinity(), 3), "inf");
  for (const double v : {0.0, 1e-7, 0.045, 1.005, 2.675, 99.995, 123456.789, 1e21, -7.25}) {
    for (int digits = 0; digits <= 6; ++digits) {
      EXPECT_EQ(fixed(v, digits), printf_fixed(v, digits)) << v << " with " << digits;
    }
  }
}

TEST(Shortest, IsTheRoundTripToCharsForm) {
  EXPECT_EQ(shortest(1.5), "1.5");
  EXPECT_EQ(shortest(2.0), "2");
  EXPECT_EQ(shortest(0.125), "0.125");
  EXPECT_EQ(shortest(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(shortest(1e-05), "1e-05");
  EXPECT_EQ(shortest(1e20), "1e+20");
  EXPECT_EQ(shortest(123456789.0), "123456789");
  EXPECT_EQ(shortest(-2.2250738585072014e-308), "-2.2250738585072014e-308");
}

TEST(ShortestReal, WritesAnIntegralValueWithAPoint) {
  EXPECT_EQ(shortest_real(5.0), "5.0");
  EXPECT_EQ(shortest_real(-3.0), "-3.0");
  EXPECT_EQ(shortest_real(0.1), "0.1");
  EXPECT_EQ(shortest_real(1e-05), "1e-05");
  EXPECT_EQ(shortest_real(1e20), "1e+20");
  EXPECT_EQ(shortest_real(std::numeric_limits<double>::infinity()), "inf");
}

}  // namespace
}  // namespace omnidp

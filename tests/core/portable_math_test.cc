#include "core/portable_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/random.h"

namespace tabforge {
namespace {

TEST(PortableMath, ExpIsWithinAFewUlpsOfTheLibrary) {
  // Every 1/1024 over the range whose results are normal numbers, plus random points.
  double worst = 0;
  for (double x = -708.0; x <= 709.0; x += 1.0 / 1024) {
    const double expected = std::exp(x);
    worst = std::max(worst, std::fabs(PortableExp(x) - expected) / expected);
  }
  for (std::uint64_t draw = 0; draw < 200000; ++draw) {
    const double x = -40 + 80 * RandomUniform(7, 1, draw);
    const double expected = std::exp(x);
    worst = std::max(worst, std::fabs(PortableExp(x) - expected) / expected);
  }
  EXPECT_LT(worst, 4 * std::numeric_limits<double>::epsilon());
  EXPECT_EQ(PortableExp(0.0), 1.0);
}

TEST(PortableMath, ExpEdgesMatchTheLibrary) {
  EXPECT_TRUE(std::isnan(PortableExp(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(PortableExp(710.0), HUGE_VAL);
  EXPECT_EQ(PortableExp(std::numeric_limits<double>::infinity()), HUGE_VAL);
  EXPECT_EQ(PortableExp(-746.0), 0.0);
  EXPECT_EQ(PortableExp(-std::numeric_limits<double>::infinity()), 0.0);
  // Subnormal results: close in absolute terms.
  for (double x = -745.0; x < -708.0; x += 0.25) {
    EXPECT_NEAR(PortableExp(x), std::exp(x), 1e-3 * std::exp(x) + 5e-324) << x;
  }
  EXPECT_NEAR(PortableSigmoid(0.0), 0.5, 0.0);
  EXPECT_NEAR(PortableSigmoid(3.0), 1.0 / (1.0 + std::exp(-3.0)), 1e-16);
}

TEST(PortableMath, FloorRoundAndScaleEqualTheLibrary) {
  const double specials[] = {0.0,
                             -0.0,
                             0.5,
                             -0.5,
                             1.5,
                             -1.5,
                             2.5,
                             -2.5,
                             0.49999999999999994,
                             -0.49999999999999994,
                             1e15 + 0.5,
                             -1e15 - 0.5,
                             4503599627370497.0,
                             -4503599627370497.0,
                             1e18,
                             -1e18};
  for (double x : specials) {
    EXPECT_EQ(FloorOf(x), std::floor(x)) << x;
    EXPECT_EQ(RoundToInteger(x), std::llround(x)) << x;
  }
  for (std::uint64_t draw = 0; draw < 100000; ++draw) {
    const double x = (RandomUniform(3, 2, draw) - 0.5) * std::ldexp(1.0, int(draw % 60));
    EXPECT_EQ(FloorOf(x), std::floor(x)) << x;
    EXPECT_EQ(RoundToInteger(x), std::llround(x)) << x;
    const int k = int(draw % 2201) - 1100;
    EXPECT_EQ(ScaleByPowerOfTwo(x, k), std::ldexp(x, k)) << x << " " << k;
  }
}

}  // namespace
}  // namespace tabforge

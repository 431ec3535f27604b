#include "models/tree/split_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace tabforge::tree {
namespace {

// The largest power of two s (at most 2^48) with s * y <= 2^62, y = max_abs * (rows + 1) + 1.
double ExpectedScale(double max_abs, std::int64_t rows) {
  const double y = max_abs * (double(rows) + 1) + 1;
  double scale = std::ldexp(1.0, 48);
  while (scale * y > std::ldexp(1.0, 62)) scale /= 2;
  return scale;
}

TEST(FixedPointScale, IsTheLargestPowerOfTwoThatKeepsSumsInRange) {
  // Powers of two, their neighbours on either side, and everyday gradient bounds.
  for (int exponent = 0; exponent <= 60; ++exponent) {
    const double power = std::ldexp(1.0, exponent);
    for (const double y :
         {power, std::nextafter(power, 0.0), std::nextafter(power, 1e300), power * 1.5}) {
      if (y < 1) continue;
      // rows = 0: y = max_abs + 1.
      const double max_abs = y - 1;
      if (max_abs + 1 != y) continue;  // not representable as max_abs + 1
      EXPECT_EQ(FixedPointScale(max_abs, 0), ExpectedScale(max_abs, 0)) << "y = " << y;
    }
  }
  for (const double max_abs : {0.0, 0.25, 0.5, 1.0, 3.7, 12345.678}) {
    for (const std::int64_t rows : {1LL, 31LL, 1000LL, 1LL << 20, 10'000'000LL, 1LL << 31}) {
      EXPECT_EQ(FixedPointScale(max_abs, rows), ExpectedScale(max_abs, rows))
          << "max_abs " << max_abs << ", rows " << rows;
    }
  }
}

TEST(FixedPointScale, SummedRoundedValuesCannotOverflow) {
  const double max_abs = 0.9999;
  const std::int64_t rows = 5'000'000;
  const double scale = FixedPointScale(max_abs, rows);
  // rows values of magnitude max_abs, each rounded to an integer at this scale, sum below 2^62.
  const double bound = double(rows) * std::ceil(max_abs * scale);
  EXPECT_LT(bound, std::ldexp(1.0, 62));
  EXPECT_GE(2 * scale * (max_abs * (double(rows) + 1) + 1), std::ldexp(1.0, 62));
}

}  // namespace
}  // namespace tabforge::tree

// Elementary functions that give the same bits on every host and CUDA device. The C library's
// exp (glibc, MSVC, CUDA's libdevice) is accurate to about one unit in the last place, but each
// rounds differently; gradients computed with it would differ in their last bit between the CPU
// and the GPU, and so would the quantized sums and the trees. These use only +, -, *, floor and
// ldexp, which IEEE arithmetic makes exact or correctly rounded everywhere; the build turns off
// the fusing of multiplies into adds (-ffp-contract=off, nvcc -fmad=false) for code that uses
// them.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace tabforge {

// x * 2^k, as ldexp gives it. Where the result stays a normal number the product with 2^k
// (built from its bits) is exact, so it equals ldexp's without the library call; elsewhere
// ldexp handles the subnormal rounding.
TFG_HOST_DEVICE inline double ScaleByPowerOfTwo(double x, int k) {
  if (k < -1000 || k > 1000 || !(fabs(x) >= 0x1p-20 && fabs(x) <= 0x1p20)) return ldexp(x, k);
  const std::uint64_t bits = std::uint64_t(k + 1023) << 52;
  double power;
  memcpy(&power, &bits, sizeof(power));
  return x * power;
}

// llround(x) for |x| < 2^63 (the nearest integer, halves away from zero) without the library
// call: the truncation is exact and so is x minus it.
TFG_HOST_DEVICE inline long long RoundToInteger(double x) {
  const long long whole = static_cast<long long>(x);
  const double rest = x - static_cast<double>(whole);
  return whole + (rest >= 0.5 ? 1 : 0) - (rest <= -0.5 ? 1 : 0);
}

// floor(x) for |x| < 2^63, from the truncation (exact there), without the library call or a
// branch (stochastic rounding floors values whose sign and fraction are random).
TFG_HOST_DEVICE inline long long FloorToInteger(double x) {
  const long long truncated = static_cast<long long>(x);
  return truncated - (static_cast<double>(truncated) > x ? 1 : 0);
}
TFG_HOST_DEVICE inline double FloorOf(double x) { return static_cast<double>(FloorToInteger(x)); }

// e^x with a relative error of a few units in the last place, bit-identical across compilers
// and devices: x = k ln 2 + r with |r| <= ln 2 / 2 (Cody and Waite's two-part ln 2), e^r from
// its Taylor polynomial of degree 13 (truncation error below 1e-17), then scaled by 2^k.
TFG_HOST_DEVICE inline double PortableExp(double x) {
  if (x != x) return x;                       // NaN
  if (x > 709.782712893384) return HUGE_VAL;  // beyond the largest double
  if (x < -745.1332191019412) return 0.0;     // below the smallest subnormal
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2High = 6.93147180369123816490e-01;  // ln 2's leading bits (k * it exact)
  constexpr double kLn2Low = 1.90821492927058770002e-10;   // ln 2 - kLn2High
  const double k = FloorOf(x * kLog2e + 0.5);
  const double r = (x - k * kLn2High) - k * kLn2Low;
  // The polynomial by Estrin's scheme (pairs of terms, then pairs of pairs on r^2, r^4, r^8):
  // a short dependency chain, so the exponentials of a row's outputs overlap.
  const double r2 = r * r;
  const double r4 = r2 * r2;
  const double r8 = r4 * r4;
  const double a0 = 1.0 + r;
  const double a1 = 0.5 + r * (1.0 / 6.0);
  const double a2 = 1.0 / 24.0 + r * (1.0 / 120.0);
  const double a3 = 1.0 / 720.0 + r * (1.0 / 5040.0);
  const double a4 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
  const double a5 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
  const double a6 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);  // 1/12!, 1/13!
  const double low = (a0 + a1 * r2) + (a2 + a3 * r2) * r4;
  const double high = (a4 + a5 * r2) + a6 * r4;
  const double p = low + high * r8;
  return ScaleByPowerOfTwo(p, static_cast<int>(k));
}

// The logistic function 1 / (1 + e^-x), bit-identical across devices.
TFG_HOST_DEVICE inline double PortableSigmoid(double x) { return 1.0 / (1.0 + PortableExp(-x)); }

}  // namespace tabforge

// The split and leaf formulas of second-order gradient boosting (XGBoost/LightGBM form), written
// once for the CPU loops and the CUDA kernels. G and H are sums of gradients and hessians.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "core/random.h"

namespace tabforge::tree {

// Regularisation of leaf values.
struct LeafRegularization {
  double lambda_l1 = 0;       // L1 penalty on leaf values
  double lambda_l2 = 0;       // L2 penalty on leaf values
  double max_delta_step = 0;  // |leaf value| cap; 0 means none
};

// G shrunk towards zero by the L1 penalty.
TFG_HOST_DEVICE inline double ThresholdL1(double sum_gradient, double lambda_l1) {
  const double magnitude = fabs(sum_gradient) - lambda_l1;
  if (magnitude <= 0) return 0;
  return sum_gradient > 0 ? magnitude : -magnitude;
}

// The value that minimises the regularised second-order loss of a leaf.
TFG_HOST_DEVICE inline double LeafValue(double sum_gradient, double sum_hessian,
                                        const LeafRegularization& reg) {
  const double denominator = sum_hessian + reg.lambda_l2;
  if (denominator <= 1e-15) return 0;  // no curvature: leave the scores as they are
  double value = -ThresholdL1(sum_gradient, reg.lambda_l1) / denominator;
  if (reg.max_delta_step > 0 && fabs(value) > reg.max_delta_step) {
    value = value > 0 ? reg.max_delta_step : -reg.max_delta_step;
  }
  return value;
}

// The loss reduction of a leaf holding (G, H) with its best value (twice the objective's
// decrease, as LightGBM reports gains).
TFG_HOST_DEVICE inline double LeafGain(double sum_gradient, double sum_hessian,
                                       const LeafRegularization& reg) {
  const double value = LeafValue(sum_gradient, sum_hessian, reg);
  const double shrunk = ThresholdL1(sum_gradient, reg.lambda_l1);
  return -(2.0 * shrunk * value + (sum_hessian + reg.lambda_l2) * value * value);
}

// LeafGain without the L1 shrinkage and the value cap, for scans over many thresholds: with
// lambda_l1 = 0 and max_delta_step = 0 it gives LeafGain's bits exactly (the same operations in
// the same order; G is never -0 since it comes from an integer sum).
TFG_HOST_DEVICE inline double LeafGainL2(double sum_gradient, double sum_hessian,
                                         double lambda_l2) {
  const double denominator = sum_hessian + lambda_l2;
  const double value = denominator <= 1e-15 ? 0.0 : -sum_gradient / denominator;
  return -(2.0 * sum_gradient * value + denominator * value * value);
}

// A power-of-two scale s such that summing `rows` values of magnitude <= max_abs, each rounded
// to an integer multiple of 1/s, cannot overflow an int64 (at most 2^48). ceil(log2(y)) comes
// from y's binary exponent, exactly, so the host and the device agree.
TFG_HOST_DEVICE inline double FixedPointScale(double max_abs, std::int64_t rows) {
  const double y = max_abs * (double(rows) + 1) + 1;
  int exponent = 0;
  const double mantissa = frexp(y, &exponent);  // y = mantissa * 2^exponent, mantissa in [0.5, 1)
  const int ceil_log2 = mantissa == 0.5 ? exponent - 1 : exponent;
  const int shift = 62 - ceil_log2;
  return ldexp(1.0, shift < 48 ? shift : 48);
}

// The random stream of node-level feature sampling (NodeFeatureMask, keyed by node).
inline constexpr std::uint64_t kNodeFeatureStream = 0x6e6f6465;  // "node"

// Extremely randomized trees: the one threshold bin node `node_key` tries on a numeric feature
// of `num_bins` bins (missing bin included), drawn uniformly from (seed, node, feature).
TFG_HOST_DEVICE inline int ExtraTreesThreshold(std::uint64_t seed, std::uint64_t node_key,
                                               int feature, int num_bins) {
  constexpr std::uint64_t kExtraTreesStream = 0x65787472;  // "extr"
  const int span = num_bins - 2 > 1 ? num_bins - 2 : 1;
  return static_cast<int>(RandomUniform(seed, kExtraTreesStream ^ node_key, feature) * span);
}

}  // namespace tabforge::tree

// The per-row work of a boosting round, written once for the CPU loops (gbm.cc) and the CUDA
// kernels (gbm_kernels.cu): gradients and fixed-point hessians of the objectives, the
// stochastic rounding of gradients to integer levels, and the score update. Every operation
// here is exact or correctly rounded IEEE arithmetic (exp through PortableExp), so both
// devices compute the same bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "core/portable_math.h"
#include "core/random.h"

namespace tabforge::gbm {

enum class ObjectiveKind { kBinary, kL2, kL1, kHuber, kQuantile, kMulticlass };

struct RowGradientParams {
  ObjectiveKind kind = ObjectiveKind::kBinary;
  double alpha = 0.9;         // huber delta / quantile
  double hessian_fixed = 1;   // fixed-point scale of the hessians
  double softmax_factor = 1;  // K / (K - 1) for K-class softmax
  int outputs = 1;            // scores per row
};

// A hessian in 32-bit fixed point on `scale` (saturating).
TFG_HOST_DEVICE inline std::uint32_t FixedHessian(double hessian, double scale) {
  const long long fixed = RoundToInteger(hessian * scale);
  return fixed > 4294967295LL ? 4294967295u : static_cast<std::uint32_t>(fixed);
}

// Gradients and fixed-point hessians of one row at its scores `s` (params.outputs of them):
// output k's gradient goes to gradients[k * stride], its hessian to hessians[k * stride].
// `exps` (params.outputs doubles, or null: recomputed) holds the softmax numerators.
TFG_HOST_DEVICE inline void RowGradients(const RowGradientParams& params, const float* s,
                                         double label, double weight, float* gradients,
                                         std::uint32_t* hessians, std::int64_t stride,
                                         double* exps) {
  const double w = weight;
  switch (params.kind) {
    case ObjectiveKind::kBinary: {
      const double p = PortableSigmoid(s[0]);
      gradients[0] = static_cast<float>((p - label) * w);
      const double h = p * (1 - p);
      hessians[0] = FixedHessian((h > 1e-16 ? h : 1e-16) * w, params.hessian_fixed);
      return;
    }
    case ObjectiveKind::kMulticlass: {
      const int outputs = params.outputs;
      double largest = s[0];
      for (int k = 1; k < outputs; ++k) largest = s[k] > largest ? double(s[k]) : largest;
      double total = 0;
      for (int k = 0; k < outputs; ++k) {
        const double e = PortableExp(s[k] - largest);
        if (exps != nullptr) exps[k] = e;
        total += e;
      }
      for (int k = 0; k < outputs; ++k) {
        const double e = exps != nullptr ? exps[k] : PortableExp(s[k] - largest);
        const double p = e / total;
        const double y = label == k ? 1.0 : 0.0;
        gradients[k * stride] = static_cast<float>((p - y) * w);
        const double h = params.softmax_factor * p * (1 - p);
        hessians[k * stride] = FixedHessian((h > 1e-16 ? h : 1e-16) * w, params.hessian_fixed);
      }
      return;
    }
    default: {
      const double residual = s[0] - label;
      double gradient = residual;  // L2
      if (params.kind == ObjectiveKind::kL1) {
        gradient = residual > 0 ? 1.0 : residual < 0 ? -1.0 : 0.0;
      } else if (params.kind == ObjectiveKind::kHuber) {
        gradient = residual < -params.alpha  ? -params.alpha
                   : residual > params.alpha ? params.alpha
                                             : residual;
      } else if (params.kind == ObjectiveKind::kQuantile) {
        gradient = residual < 0 ? -params.alpha : 1.0 - params.alpha;
      }
      gradients[0] = static_cast<float>(gradient * w);
      hessians[0] = FixedHessian(w, params.hessian_fixed);
      return;
    }
  }
}

// A gradient rounded stochastically to an integer level in [-level, level]: floor(g / scale + u)
// with u uniform from (seed, stream, row), so the rounding is unbiased and reproducible.
// The same from gradient / scale and StreamKey(seed, stream), for loops over rows of equal
// gradients.
TFG_HOST_DEVICE inline std::int32_t QuantizeScaledGradient(double scaled, std::int64_t level,
                                                           std::uint64_t key, std::uint64_t row) {
  std::int64_t q = FloorToInteger(scaled + KeyedUniform(key, row));
  q = q < -level ? -level : q;
  return static_cast<std::int32_t>(q > level ? level : q);
}
TFG_HOST_DEVICE inline std::int32_t QuantizeGradient(float gradient, double scale,
                                                     std::int64_t level, std::uint64_t seed,
                                                     std::uint64_t stream, std::uint64_t row) {
  return QuantizeScaledGradient(gradient / scale, level, StreamKey(seed, stream), row);
}

// A training score after a tree: score + value in double, rounded once to float.
TFG_HOST_DEVICE inline float AddToScore(float score, double value) {
  return static_cast<float>(score + value);
}

}  // namespace tabforge::gbm

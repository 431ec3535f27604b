// Numeric-only feature matrices of counter-based uniform values, for the family tests.
#pragma once

#include <cstdint>
#include <string>

#include "core/random.h"
#include "features/feature_matrix.h"

namespace tabforge::testing {

// `rows` x `dims` numeric features named x0, x1, ...: feature f uniform in [0, 1), or in
// [0, f + 1) when `widening` (features on different scales).
inline features::FeatureMatrix UniformFeatures(std::int64_t rows, int dims, std::uint64_t seed,
                                               bool widening = false) {
  features::FeatureMatrix x;
  x.num_rows = rows;
  x.numeric.resize(static_cast<std::size_t>(rows) * dims);
  for (int f = 0; f < dims; ++f) x.numeric_info.push_back({"x" + std::to_string(f), "", 0, {}});
  for (std::int64_t row = 0; row < rows; ++row) {
    for (int f = 0; f < dims; ++f) {
      const double scale = widening ? f + 1 : 1;
      x.numeric[f * rows + row] = static_cast<float>(RandomUniform(seed, f, row) * scale);
    }
  }
  return x;
}

}  // namespace tabforge::testing

// The GPU predictor's kernel (gbm_predict.cu), called by DevicePredictRaw (gbm_cuda.cc). Plain
// C++17 (the kernels' dialect): device pointers, sizes and POD parameters only.
#pragma once

#include <cstdint>

namespace tabforge::gbm::kernels {

// CompactForest's node and category range, field for field (gbm_cuda.cc checks the layouts
// match), and the bits of its feature word.
struct ForestNode {
  std::int32_t feature;  // index | kNodeCategorical | kNodeDefaultLeft
  union {
    float threshold;       // numeric: values <= threshold go left
    std::int32_t payload;  // categorical: index of its category range
  };
  std::int32_t left;  // >= 0 a node, < 0 the leaf ~child
  std::int32_t right;
};
struct ForestCategories {
  std::int32_t begin;  // words [begin, end) of the bits: bit b set = bin b goes left
  std::int32_t end;
};
inline constexpr std::int32_t kNodeCategorical = 1 << 30;
inline constexpr std::int32_t kNodeDefaultLeft = 1 << 29;
inline constexpr std::int32_t kNodeFeatureMask = kNodeDefaultLeft - 1;

// The forest and the categorical features' code tables on the device.
struct DeviceForest {
  const ForestNode* nodes;
  const std::int32_t* roots;  // per tree: a node, or ~leaf
  int trees;
  const double* leaves;
  const ForestCategories* categories;
  const std::uint32_t* bits;
  int numeric_count;
  // Categorical feature c (forest feature numeric_count + c): its code_to_bin table is
  // code_bins[code_begin[c], code_begin[c + 1]); codes outside it take other_bin[c].
  const std::uint16_t* code_bins;
  const std::int32_t* code_begin;
  const std::int32_t* other_bin;
};

// The most outputs (trees per round) the kernel sums per row.
inline constexpr int kMaxPredictOutputs = 64;

// raw[row * outputs + k] = init[k] plus the leaf values of trees k, k + outputs, ... in tree
// order, for rows [0, rows) whose columns are numeric[f * rows + r] (NaN: missing) and
// codes[c * rows + r]; CompactForest::Next's rules. One thread per row.
void Predict(const DeviceForest& forest, const float* numeric, const std::int32_t* codes,
             std::int64_t rows, int outputs, const double* init, double* raw);

}  // namespace tabforge::gbm::kernels

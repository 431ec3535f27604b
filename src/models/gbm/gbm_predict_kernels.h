// The GPU predictor's kernel (gbm_predict.cu), called by DevicePredictRaw (gbm_cuda.cc), and
// the row scoring it runs, which host code can run too (gbm_predict_tables.h builds the arrays;
// a CPU test checks ScoreRow against GbmModel::PredictRaw). Plain C++17 (the kernels'
// dialect): pointers, sizes and POD parameters only.
#pragma once

#include <cstdint>

#include "core/host_device.h"

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

// Row `row` of a block of `rows` rows whose columns are numeric[f * rows + r] (NaN: missing) and
// codes[c * rows + r]: sums[k] = init[k] plus the leaf values of trees k, k + outputs, ... added
// in tree order (GbmModel::PredictRaw's sums), by CompactForest::Next's rules: NaN goes the
// node's default way, values <= threshold left; a category goes left when its bin's bit is set.
TFG_HOST_DEVICE inline void ScoreRow(const DeviceForest& forest, const float* numeric,
                                     const std::int32_t* codes, std::int64_t rows, std::int64_t row,
                                     int outputs, const double* init, double* sums) {
  for (int k = 0; k < outputs; ++k) sums[k] = init[k];
  int k = 0;
  for (int tree = 0; tree < forest.trees; ++tree) {
    std::int32_t at = forest.roots[tree];
    while (at >= 0) {
      const ForestNode node = forest.nodes[at];
      bool left;
      if (node.feature & kNodeCategorical) {
        const int c = (node.feature & kNodeFeatureMask) - forest.numeric_count;
        const std::int32_t code = codes[c * rows + row];
        const std::int32_t begin = forest.code_begin[c];
        const std::int32_t size = forest.code_begin[c + 1] - begin;
        const int bin =
            code < 0 || code >= size ? forest.other_bin[c] : int(forest.code_bins[begin + code]);
        const ForestCategories categories = forest.categories[node.payload];
        const std::int32_t word = categories.begin + bin / 32;
        left = word < categories.end && ((forest.bits[word] >> (bin % 32)) & 1u);
      } else {
        const float value = numeric[std::int64_t(node.feature & kNodeFeatureMask) * rows + row];
        const bool missing = value != value;  // NaN
        left = missing ? (node.feature & kNodeDefaultLeft) != 0 : value <= node.threshold;
      }
      at = left ? node.left : node.right;
    }
    sums[k] += forest.leaves[~at];
    k = k + 1 == outputs ? 0 : k + 1;
  }
}

// raw[row * outputs + k] = ScoreRow's sums for rows [0, rows), one thread per row.
void Predict(const DeviceForest& forest, const float* numeric, const std::int32_t* codes,
             std::int64_t rows, int outputs, const double* init, double* raw);

}  // namespace tabforge::gbm::kernels

// The GPU predictor's arrays in host memory: a CompactForest read as the kernel's types (same
// layout, checked in gbm_predict_tables.cc) and the categorical features' code tables of its
// BinMapper. DevicePredictRaw (gbm_cuda.cc) uploads them; host code can score rows from them
// with kernels::ScoreRow (a CPU test compares that with GbmModel::PredictRaw).
#pragma once

#include <cstdint>
#include <vector>

#include "models/gbm/gbm_predict_kernels.h"
#include "models/tree/binning.h"
#include "models/tree/compact_forest.h"

namespace tabforge::gbm {

struct ForestTables {
  int numeric_count = 0;
  int categorical_count = 0;
  // Categorical feature c's code_to_bin table is code_bins[code_begin[c], code_begin[c + 1]);
  // codes outside it take other_bin[c].
  std::vector<std::uint16_t> code_bins;
  std::vector<std::int32_t> code_begin;
  std::vector<std::int32_t> other_bin;

  static ForestTables Of(const tree::CompactForest& forest, const tree::BinMapper& mapper);

  // The forest's arrays as the kernel's types.
  static const kernels::ForestNode* Nodes(const tree::CompactForest& forest);
  static const kernels::ForestCategories* Categories(const tree::CompactForest& forest);

  // A view of `forest` and these tables in host memory (for kernels::ScoreRow on the host).
  kernels::DeviceForest HostView(const tree::CompactForest& forest) const;
};

}  // namespace tabforge::gbm

// Gradient histograms over bins with integer sums (quantized gradients, fixed-point hessians):
// the order in which rows are added cannot change a bin's total, so trees do not depend on the
// thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "models/tree/binning.h"

namespace tabforge::tree {

// One bin's sums of quantized gradients and fixed-point hessians, and its row count.
struct HistogramBin {
  std::int64_t gradient = 0;
  std::int64_t hessian = 0;
  std::int64_t count = 0;
};

// Where each feature's bins start in a flat histogram of all features.
struct HistogramLayout {
  std::vector<std::int64_t> offsets;  // num_features + 1 entries; feature f's bins are
                                      // [offsets[f], offsets[f + 1])
  explicit HistogramLayout(const BinMapper& mapper);
  HistogramLayout() = default;
  std::int64_t total_bins() const { return offsets.empty() ? 0 : offsets.back(); }
};

// Sums the quantized gradients/hessians of `rows` into `histogram` (total_bins entries,
// overwritten) for the features whose `active` flag is set; others are left zero. Parallel over
// features on `threads` threads.
void BuildHistogram(const BinMatrix& bins, const HistogramLayout& layout,
                    const std::vector<std::uint8_t>& active, const std::int32_t* rows,
                    std::int64_t num_rows, const std::int8_t* gradients,
                    const std::int64_t* hessians, HistogramBin* histogram, int threads);

// larger = parent - smaller, bin by bin (exact in integers).
void SubtractHistogram(const HistogramBin* parent, const HistogramBin* smaller,
                       HistogramBin* larger, std::int64_t total_bins);

}  // namespace tabforge::tree

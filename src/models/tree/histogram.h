// Gradient histograms over bins with integer sums (quantized gradients, fixed-point hessians):
// the order in which rows are added cannot change a bin's total, so trees do not depend on the
// thread count.
//
// A cell is 16 bytes: the gradient sum and the row count share one 64-bit word (gradient * 2^32
// + count), the fixed-point hessian sum takes the other. One row adds one 16-byte pair to one
// cell per feature, so building a histogram is a row-wise pass over the row-major bin matrix.
// The packing is exact while every |gradient sum| < 2^31 and every count < 2^32; the caller
// bounds the quantized gradients so that holds (see MaxGradientLevel).
#pragma once

#include <cstdint>
#include <vector>

#include "models/tree/binning.h"

namespace tabforge::tree {

// One bin's sums (or one row's contribution): quantized gradient, fixed-point hessian, count.
struct HistogramBin {
  std::int64_t packed = 0;   // gradient * 2^32 + count
  std::int64_t hessian = 0;  // fixed point

  static HistogramBin Row(std::int64_t gradient, std::int64_t hessian) {
    return {gradient * (std::int64_t(1) << 32) + 1, hessian};
  }
  std::int64_t count() const { return static_cast<std::int64_t>(std::uint64_t(packed) & 0xffffffffu); }
  std::int64_t gradient() const { return (packed - count()) / (std::int64_t(1) << 32); }
  HistogramBin& operator+=(const HistogramBin& other) {
    packed += other.packed;
    hessian += other.hessian;
    return *this;
  }
  HistogramBin& operator-=(const HistogramBin& other) {
    packed -= other.packed;
    hessian -= other.hessian;
    return *this;
  }
  friend HistogramBin operator-(HistogramBin a, const HistogramBin& b) { return a -= b; }
};

// The largest |quantized gradient| per row that keeps the packed sums of `rows` rows exact.
std::int64_t MaxGradientLevel(std::int64_t rows);

// Where each feature's bins start in a flat histogram of all features.
struct HistogramLayout {
  std::vector<std::int64_t> offsets;  // num_features + 1 entries; feature f's bins are
                                      // [offsets[f], offsets[f + 1])
  explicit HistogramLayout(const BinMapper& mapper);
  HistogramLayout() = default;
  std::int64_t total_bins() const { return offsets.empty() ? 0 : offsets.back(); }
};

// Per-thread partial histograms for parallel builds, kept between calls.
struct HistogramScratch {
  std::vector<HistogramBin> partials;
};

// Sums the pairs of `rows` into `histogram` (total_bins entries, overwritten) for the features
// listed in `features` (ascending); the others are left zero. Large row sets are
// split into one contiguous chunk per thread, each summed into its own partial histogram, and
// the partials are added up: integer sums, so the result is the same for any thread count.
void BuildHistogram(const BinMatrix& bins, const HistogramLayout& layout,
                    const std::vector<int>& features, const std::int32_t* rows,
                    std::int64_t num_rows, const HistogramBin* pairs,
                    HistogramBin* histogram, HistogramScratch& scratch, int threads);

// larger = parent - smaller, bin by bin (exact in integers).
void SubtractHistogram(const HistogramBin* parent, const HistogramBin* smaller,
                       HistogramBin* larger, std::int64_t total_bins);

}  // namespace tabforge::tree

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
  std::int64_t count() const {
    return static_cast<std::int64_t>(std::uint64_t(packed) & 0xffffffffu);
  }
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

// One row's gradient pair as stored (8 bytes): the quantized gradient and the fixed-point
// hessian, which a 32-bit word holds (see RowHessianScale); expanded to a cell when summed.
struct GradientPair {
  std::int32_t gradient = 0;
  std::uint32_t hessian = 0;
  HistogramBin Cell() const { return HistogramBin::Row(gradient, hessian); }
};

// A power-of-two scale s with max_abs * s < 2^32, for per-row fixed-point hessians.
double RowHessianScale(double max_abs);

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

// How each feature's rows spread over its bins, found once per bin matrix. A feature whose rows
// all share one bin can never split; a "sparse" one (one bin holds at least half the rows, as
// zeros do in count features) is summed from per-row lists of its other bins' cells, and its
// most frequent bin is then the leaf's total minus the rest (LightGBM skips that bin too).
struct BinProfile {
  std::vector<std::uint8_t> splittable;    // per feature: rows in two bins or more
  std::vector<int> most_frequent;          // per feature: the sparse feature's dominant bin, or -1
  std::vector<std::int64_t> sparse_begin;  // num_rows + 1: row r's cells are [begin[r], begin[r+1])
  std::vector<std::uint32_t> sparse_cells;  // histogram cells (layout offset + bin) of the sparse
                                            // features' other bins, by row

  static BinProfile Analyze(const BinMatrix& bins, const HistogramLayout& layout);
  bool any_sparse() const { return !sparse_cells.empty(); }
};

// What one histogram is built from: the bin matrix for the dense features listed and the
// profile's per-row lists for the sparse ones.
struct HistogramSource {
  const BinMatrix* bins = nullptr;
  const HistogramLayout* layout = nullptr;
  const BinProfile* profile = nullptr;
  std::vector<int> dense_features;   // ascending
  std::vector<int> sparse_features;  // ascending; their dominant bins are completed
};

// Per-thread partial histograms for parallel builds, kept between calls.
struct HistogramScratch {
  std::vector<HistogramBin> partials;
};

// Sums the pairs of `rows` (whose sum is `total`) into `histogram` (total_bins entries,
// overwritten) for the source's features; other features' cells hold no meaningful sums.
// Large row sets are split into one contiguous chunk per thread, each summed into its own
// partial histogram, and the partials are added up; smaller ones split their features between
// the threads instead. Integer sums, so the result is the same for any thread count.
void BuildHistogram(const HistogramSource& source, const std::int32_t* rows, std::int64_t num_rows,
                    const GradientPair* pairs, const HistogramBin& total, HistogramBin* histogram,
                    HistogramScratch& scratch, int threads);

// The same for merged rows (see RowGroups): each row's cell is given whole, its count the rows it
// stands for.
void BuildHistogram(const HistogramSource& source, const std::int32_t* rows, std::int64_t num_rows,
                    const HistogramBin* cells, const HistogramBin& total, HistogramBin* histogram,
                    HistogramScratch& scratch, int threads);

// larger = parent - smaller, bin by bin (exact in integers).
void SubtractHistogram(const HistogramBin* parent, const HistogramBin* smaller,
                       HistogramBin* larger, std::int64_t total_bins);

}  // namespace tabforge::tree

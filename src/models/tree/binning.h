// Binning for the tree engine (GBM, RF, XT): each feature's values are mapped to a small
// integer bin, so histograms over bins replace sorting. As LightGBM does it:
//   numeric     quantile boundaries from a row sample (at most max_bin - 1 value bins, each
//               holding at least min_data_in_bin sampled rows where the data allow), chosen at
//               midpoints between distinct values; one dedicated bin for missing (NaN)
//   categorical the pipeline's codes, most frequent first (or in sorted order), one bin each
//               up to max_cat_bins; the rest share one bin
// The bin matrix is row-major (a row's bins are contiguous, so a histogram pass reads each row
// once) with 8-bit cells when every feature has at most 256 bins and 16-bit cells otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "features/feature_matrix.h"

namespace tabforge {
class ByteReader;
class ByteWriter;
}  // namespace tabforge

namespace tabforge::tree {

struct BinningOptions {
  // Bins per numeric feature, missing bin included (LightGBM's max_bin, default 255); up to
  // 65535.
  int max_bin = 255;
  // Fewest sampled rows per numeric bin (LightGBM's min_data_in_bin).
  int min_data_in_bin = 3;
  // Rows sampled to find the boundaries when there are more (bin_construct_sample_cnt).
  std::int64_t sample_rows = 200000;
  // Bins per categorical feature, the shared "other categories" bin included.
  int max_cat_bins = 255;
  // Seed of the row sample.
  std::uint64_t seed = 0;
  // Categorical bins numbered in the categories' sorted order (FeatureInfo::sorted_rank, the
  // shared bin last) instead of most frequent first; which categories get a bin of their own
  // does not change. Forests sweep categories in bin order, as scikit-learn's sweep ordinal
  // codes.
  bool categories_sorted = false;

  // Throws InvalidInput naming the option and its valid range when one is out of range.
  void Validate() const;
};

// How one feature's values map to bins.
struct FeatureBins {
  bool categorical = false;
  // Numeric: value bin b holds values v with upper_bounds[b-1] < v <= upper_bounds[b]; the
  // last value bin's bound is +infinity. Empty when the feature has no present value.
  std::vector<double> upper_bounds;
  // Categorical: bin of each code (index = code); codes beyond the table go to other_bin.
  std::vector<std::uint16_t> code_to_bin;
  std::uint16_t other_bin = 0;
  // Bins in all; the missing bin (numeric) is the last, num_bins - 1.
  int num_bins = 1;

  int missing_bin() const { return num_bins - 1; }
  // The bin of a numeric value (NaN -> missing_bin()).
  int NumericBin(float value) const;
  // The bin of a categorical code (inline: tree walks call it at every categorical node).
  int CategoryBin(std::int32_t code) const {
    if (code < 0 || code >= static_cast<std::int32_t>(code_to_bin.size())) return other_bin;
    return code_to_bin[static_cast<std::size_t>(code)];
  }
};

// Bins of every feature of a FeatureMatrix: numeric features first, then categorical ones, in
// the matrix's order. Text n-gram counts are not binned here.
class BinMapper {
 public:
  // Learns the boundaries from `features` with `threads` threads (0 = all); the result does
  // not depend on the thread count.
  static BinMapper Fit(const features::FeatureMatrix& features, const BinningOptions& options,
                       int threads = 0);

  int num_features() const { return static_cast<int>(bins_.size()); }
  const FeatureBins& feature(int index) const { return bins_[index]; }
  // Largest num_bins over the features.
  int MaxBins() const;

  // Appends / reads the fitted bins (for model files).
  void Write(ByteWriter& writer) const;
  static BinMapper Read(ByteReader& reader);

 private:
  std::vector<FeatureBins> bins_;
};

// The binned rows, row-major: row r, feature f is at r * num_features + f, in whichever of
// bins8 / bins16 is used (the other is empty).
struct BinMatrix {
  std::int64_t num_rows = 0;
  int num_features = 0;
  std::vector<std::uint8_t> bins8;
  std::vector<std::uint16_t> bins16;

  bool wide() const { return !bins16.empty(); }
  int Bin(int feature, std::int64_t row) const {
    std::size_t at = static_cast<std::size_t>(row) * num_features + feature;
    return wide() ? bins16[at] : bins8[at];
  }
};

// Bins `features` with `mapper`, in parallel over features and row blocks.
BinMatrix ApplyBins(const BinMapper& mapper, const features::FeatureMatrix& features,
                    int threads = 0);

}  // namespace tabforge::tree

// The model-ready output of the feature pipeline: a dense float32 block of numeric features,
// a dense int32 block of categorical codes and a sparse block of text n-gram counts, all for
// the same rows, plus the metadata every model queries (names, kinds, cardinalities).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tabforge::features {

// What one output feature is, and where it came from.
struct FeatureInfo {
  std::string name;    // unique output name, e.g. "age", "joined.year", "name.__nchars__"
  std::string source;  // the input column it was made from
  // Categorical features only: number of codes, 0..cardinality-1 (see CategoricalEncoder).
  std::int32_t cardinality = 0;
  // Categorical features only: each code's place when the kept categories are sorted bytewise
  // (the order of scikit-learn's OrdinalEncoder and of AutoGluon's category codes), the rare,
  // unknown and missing codes after them. Empty means the codes' own order.
  std::vector<std::int32_t> sorted_rank;
};

// Sparse counts in compressed sparse row form: row r's entries are
// [row_offsets[r], row_offsets[r+1]) of columns/counts; columns ascending within a row.
struct SparseCounts {
  std::int64_t num_columns = 0;
  std::vector<std::int64_t> row_offsets{0};  // num_rows + 1 entries
  std::vector<std::int32_t> columns;         // feature index within this block
  std::vector<std::uint16_t> counts;         // occurrences, saturated at 65535
  std::vector<FeatureInfo> info;             // one per column of this block
};

struct FeatureMatrix {
  std::int64_t num_rows = 0;
  // Column-major: numeric feature f, row r is numeric[f * num_rows + r]; missing is NaN.
  std::vector<float> numeric;
  std::vector<FeatureInfo> numeric_info;
  // Column-major: categorical feature f, row r is categorical[f * num_rows + r], a code in
  // [0, categorical_info[f].cardinality).
  std::vector<std::int32_t> categorical;
  std::vector<FeatureInfo> categorical_info;
  // Text n-gram counts (empty when the table has no text column).
  SparseCounts ngrams;

  int num_numeric() const { return static_cast<int>(numeric_info.size()); }
  int num_categorical() const { return static_cast<int>(categorical_info.size()); }
  const float* NumericColumn(int feature) const { return numeric.data() + feature * num_rows; }
  const std::int32_t* CategoricalColumn(int feature) const {
    return categorical.data() + feature * num_rows;
  }
};

// The rows `rows` (indices into `matrix`, any order, repeats allowed) as a new matrix with the
// same features.
FeatureMatrix SelectRows(const FeatureMatrix& matrix, const std::vector<std::int64_t>& rows);

}  // namespace tabforge::features

#include "features/feature_matrix.h"

#include "core/error.h"

namespace tabforge::features {

FeatureMatrix SelectRows(const FeatureMatrix& matrix, const std::vector<std::int64_t>& rows) {
  FeatureMatrix out;
  const auto count = static_cast<std::int64_t>(rows.size());
  out.num_rows = count;
  out.numeric_info = matrix.numeric_info;
  out.categorical_info = matrix.categorical_info;
  out.numeric.resize(static_cast<std::size_t>(count) * matrix.num_numeric());
  out.categorical.resize(static_cast<std::size_t>(count) * matrix.num_categorical());
  for (std::int64_t row : rows) {
    TFG_CHECK(row >= 0 && row < matrix.num_rows, "row {} of {}", row, matrix.num_rows);
  }
  for (int feature = 0; feature < matrix.num_numeric(); ++feature) {
    const float* from = matrix.NumericColumn(feature);
    float* to = out.numeric.data() + static_cast<std::size_t>(feature) * count;
    for (std::int64_t index = 0; index < count; ++index) to[index] = from[rows[index]];
  }
  for (int feature = 0; feature < matrix.num_categorical(); ++feature) {
    const std::int32_t* from = matrix.CategoricalColumn(feature);
    std::int32_t* to = out.categorical.data() + static_cast<std::size_t>(feature) * count;
    for (std::int64_t index = 0; index < count; ++index) to[index] = from[rows[index]];
  }
  out.ngrams.num_columns = matrix.ngrams.num_columns;
  out.ngrams.info = matrix.ngrams.info;
  const bool has_ngrams =
      matrix.ngrams.row_offsets.size() == static_cast<std::size_t>(matrix.num_rows) + 1;
  out.ngrams.row_offsets.assign(1, 0);
  for (std::int64_t row : rows) {
    if (has_ngrams) {
      for (std::int64_t at = matrix.ngrams.row_offsets[row];
           at < matrix.ngrams.row_offsets[row + 1]; ++at) {
        out.ngrams.columns.push_back(matrix.ngrams.columns[at]);
        out.ngrams.counts.push_back(matrix.ngrams.counts[at]);
      }
    }
    out.ngrams.row_offsets.push_back(static_cast<std::int64_t>(out.ngrams.columns.size()));
  }
  return out;
}

}  // namespace tabforge::features

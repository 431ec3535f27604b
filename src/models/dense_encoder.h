// The dense numeric view the distance and linear families (KNN, LR) learn from: numeric
// features standardised with the training rows' finite values' mean and standard deviation (or
// first mapped through their training quantiles to [0, 1]), missing and infinite values at the
// mean (0 after scaling), categorical features dropped or one-hot encoded with at most
// `max_categories` columns each (the most frequent codes; the rest share one "other" column).
// Text counts are not used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "features/feature_matrix.h"

namespace tabforge {
class ByteReader;
class ByteWriter;
}  // namespace tabforge

namespace tabforge::models {

struct DenseEncoderOptions {
  bool one_hot = false;     // categorical features: one-hot columns (true) or dropped
  int max_categories = 32;  // one-hot columns per categorical feature, "other" included
  bool quantile = false;    // numeric features through their quantiles before scaling
  int quantiles = 101;      // quantile transform: the knots kept per feature
  int threads = 0;          // threads learning the features' scalings (0: all)
};

class DenseEncoder {
 public:
  // Learns the scaling (and quantiles, one-hot columns) from `train`.
  static DenseEncoder Fit(const features::FeatureMatrix& train, const DenseEncoderOptions& options);

  int num_columns() const { return num_numeric_ + static_cast<int>(one_hot_columns_); }
  // The rows of `features` (same features as the training matrix), row-major
  // num_rows x num_columns(), as float.
  std::vector<float> Transform(const features::FeatureMatrix& features, int threads) const;

  // The same view in two parts, for models that exploit the one-hot columns' sparsity: the
  // numeric columns (row-major num_rows x num_numeric()) and, per row and categorical feature,
  // the one column set to 1 (row-major num_rows x num_categorical(), indices in
  // [num_numeric(), num_columns())). Without one-hot columns the second part is empty.
  std::vector<float> TransformNumeric(const features::FeatureMatrix& features, int threads) const;
  std::vector<std::int32_t> OneHotColumns(const features::FeatureMatrix& features,
                                          int threads) const;
  int num_numeric() const { return num_numeric_; }
  int num_categorical() const { return one_hot_ ? static_cast<int>(first_column_.size()) : 0; }

  void Write(ByteWriter& writer) const;
  static DenseEncoder Read(ByteReader& reader);

 private:
  int num_numeric_ = 0;
  std::vector<double> mean_;   // per numeric feature (of the transformed value)
  std::vector<double> scale_;  // per numeric feature: 1 / standard deviation (1 when constant)
  // Quantile transform: per numeric feature, `quantiles` ascending training values (empty: none).
  std::vector<std::vector<double>> knots_;
  // One-hot: per categorical feature, the first column and the codes given a column of their own.
  std::vector<std::int64_t> first_column_;
  std::vector<std::int32_t> kept_codes_;
  std::int64_t one_hot_columns_ = 0;
  bool one_hot_ = false;
};

}  // namespace tabforge::models

#include "models/dense_encoder.h"

#include <algorithm>
#include <cmath>

#include "core/context.h"
#include "core/error.h"
#include "core/serialize.h"

namespace tabforge::models {
namespace {

// The fraction of the training values at or below `value` (linear between the knots), in [0, 1].
double QuantileOf(const std::vector<double>& knots, double value) {
  if (knots.size() < 2) return 0.5;
  if (value <= knots.front()) return 0.0;
  if (value >= knots.back()) return 1.0;
  const auto upper = std::upper_bound(knots.begin(), knots.end(), value);
  const auto lower = upper - 1;
  // Equal knots (a value many rows share): the middle of their span.
  const auto first_equal = std::lower_bound(knots.begin(), knots.end(), *lower);
  const double step = 1.0 / double(knots.size() - 1);
  if (*upper == *lower) return double(first_equal - knots.begin()) * step;
  const double low_rank = (double(first_equal - knots.begin()) + double(lower - knots.begin())) / 2;
  const double fraction = (value - *lower) / (*upper - *lower);
  return (low_rank + fraction * (double(upper - knots.begin()) - low_rank)) * step;
}

}  // namespace

DenseEncoder DenseEncoder::Fit(const features::FeatureMatrix& train,
                               const DenseEncoderOptions& options) {
  DenseEncoder encoder;
  encoder.num_numeric_ = train.num_numeric();
  encoder.one_hot_ = options.one_hot;
  const std::int64_t rows = train.num_rows;
  const auto numeric = static_cast<std::size_t>(encoder.num_numeric_);
  encoder.knots_.resize(numeric);
  encoder.mean_.resize(numeric);
  encoder.scale_.resize(numeric);
  auto set_scale = [&](int feature, double mean, double squares, std::int64_t present) {
    const double deviation = present == 0 ? 0.0 : std::sqrt(squares / double(present));
    encoder.mean_[feature] = mean;
    encoder.scale_[feature] = deviation > 1e-12 ? 1.0 / deviation : 1.0;
  };
  if (options.quantile) {
    // The features' present values, sorted, give the knots; the scaling is that of their
    // quantile positions. One feature at a time: each needs a copy of its column.
    for (int feature = 0; feature < encoder.num_numeric_; ++feature) {
      const float* column = train.NumericColumn(feature);
      std::vector<double> present;
      present.reserve(static_cast<std::size_t>(rows));
      for (std::int64_t row = 0; row < rows; ++row) {
        if (std::isfinite(column[row])) present.push_back(column[row]);
      }
      if (present.size() >= 2) {
        std::sort(present.begin(), present.end());
        std::vector<double>& knots = encoder.knots_[feature];
        const int count = std::max(2, options.quantiles);
        for (int knot = 0; knot < count; ++knot) {
          const double position = double(knot) * double(present.size() - 1) / double(count - 1);
          knots.push_back(present[static_cast<std::size_t>(std::llround(position))]);
        }
        for (double& value : present) value = QuantileOf(knots, value);
      }
      double mean = 0, squares = 0;
      for (double value : present) mean += value;
      mean = present.empty() ? 0.0 : mean / double(present.size());
      for (double value : present) squares += (value - mean) * (value - mean);
      set_scale(feature, mean, squares, static_cast<std::int64_t>(present.size()));
    }
  } else {
    // Mean and deviation straight from the columns, features in parallel; each is summed in
    // row order, so the values do not depend on the thread count.
    Context context;
    context.num_threads = options.threads;
#pragma omp parallel for num_threads(context.Threads()) schedule(dynamic, 1)
    for (int feature = 0; feature < encoder.num_numeric_; ++feature) {
      const float* column = train.NumericColumn(feature);
      double mean = 0;
      std::int64_t present = 0;
      for (std::int64_t row = 0; row < rows; ++row) {
        if (!std::isfinite(column[row])) continue;
        mean += column[row];
        ++present;
      }
      mean = present == 0 ? 0.0 : mean / double(present);
      double squares = 0;
      for (std::int64_t row = 0; row < rows; ++row) {
        if (!std::isfinite(column[row])) continue;
        const double value = column[row];
        squares += (value - mean) * (value - mean);
      }
      set_scale(feature, mean, squares, present);
    }
  }
  if (options.one_hot) {
    for (int feature = 0; feature < train.num_categorical(); ++feature) {
      const std::int32_t cardinality = std::max(train.categorical_info[feature].cardinality, 1);
      std::vector<std::int64_t> counts(static_cast<std::size_t>(cardinality), 0);
      const std::int32_t* codes = train.CategoricalColumn(feature);
      for (std::int64_t row = 0; row < rows; ++row) {
        if (codes[row] >= 0 && codes[row] < cardinality) ++counts[codes[row]];
      }
      std::vector<std::int32_t> order;
      for (std::int32_t code = 0; code < cardinality; ++code) {
        if (counts[code] > 0) order.push_back(code);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](std::int32_t a, std::int32_t b) { return counts[a] > counts[b]; });
      // Every code seen gets a column when they fit; else the most frequent ones, the rest
      // sharing the last column.
      const auto own = static_cast<std::size_t>(std::max(1, options.max_categories - 1));
      if (order.size() > own + 1) order.resize(own);
      std::sort(order.begin(), order.end());
      encoder.first_column_.push_back(encoder.one_hot_columns_);
      encoder.kept_codes_.insert(encoder.kept_codes_.end(), order.begin(), order.end());
      encoder.kept_codes_.push_back(-1);  // end of this feature's codes
      encoder.one_hot_columns_ += static_cast<std::int64_t>(order.size()) + 1;
    }
  }
  return encoder;
}

std::vector<float> DenseEncoder::TransformNumeric(const features::FeatureMatrix& features,
                                                  int threads) const {
  TFG_CHECK(features.num_numeric() == num_numeric_, "{} numeric features, the encoder has {}",
            features.num_numeric(), num_numeric_);
  Context context;
  context.num_threads = threads;
  const std::int64_t rows = features.num_rows;
  std::vector<float> out(static_cast<std::size_t>(rows * num_numeric_), 0.0f);
#pragma omp parallel for num_threads(context.Threads()) schedule(static, 1024)
  for (std::int64_t row = 0; row < rows; ++row) {
    float* into = out.data() + row * num_numeric_;
    for (int feature = 0; feature < num_numeric_; ++feature) {
      const float raw = features.NumericColumn(feature)[row];
      if (!std::isfinite(raw)) continue;  // missing or infinite: the mean, 0
      const double value = knots_[feature].empty() ? raw : QuantileOf(knots_[feature], raw);
      into[feature] = static_cast<float>((value - mean_[feature]) * scale_[feature]);
    }
  }
  return out;
}

std::vector<std::int32_t> DenseEncoder::OneHotColumns(const features::FeatureMatrix& features,
                                                      int threads) const {
  const int categorical = num_categorical();
  if (categorical == 0) return {};
  TFG_CHECK(features.num_categorical() == categorical,
            "{} categorical features, the encoder has {}", features.num_categorical(), categorical);
  Context context;
  context.num_threads = threads;
  // Each feature's kept codes, as [begin, end) of kept_codes_ (a -1 closes each list).
  std::vector<std::pair<std::size_t, std::size_t>> code_ranges;
  for (std::size_t at = 0; at < kept_codes_.size();) {
    std::size_t end = at;
    while (kept_codes_[end] != -1) ++end;
    code_ranges.push_back({at, end});
    at = end + 1;
  }
  const std::int64_t rows = features.num_rows;
  std::vector<std::int32_t> out(static_cast<std::size_t>(rows * categorical));
#pragma omp parallel for num_threads(context.Threads()) schedule(static, 1024)
  for (std::int64_t row = 0; row < rows; ++row) {
    for (int feature = 0; feature < categorical; ++feature) {
      const std::int32_t code = features.CategoricalColumn(feature)[row];
      const auto [begin, end] = code_ranges[feature];
      const auto first = kept_codes_.begin() + std::ptrdiff_t(begin);
      const auto last = kept_codes_.begin() + std::ptrdiff_t(end);
      const auto found = std::lower_bound(first, last, code);
      // Codes without a column of their own take the feature's last ("other") column.
      const std::int64_t offset = found != last && *found == code ? found - first : last - first;
      out[row * categorical + feature] =
          static_cast<std::int32_t>(num_numeric_ + first_column_[feature] + offset);
    }
  }
  return out;
}

std::vector<float> DenseEncoder::Transform(const features::FeatureMatrix& features,
                                           int threads) const {
  std::vector<float> numeric = TransformNumeric(features, threads);
  if (num_columns() == num_numeric_) return numeric;  // no one-hot columns: the same rows
  const std::vector<std::int32_t> hot = OneHotColumns(features, threads);
  const std::int64_t rows = features.num_rows;
  const int columns = num_columns();
  const int categorical = num_categorical();
  std::vector<float> out(static_cast<std::size_t>(rows * columns), 0.0f);
  for (std::int64_t row = 0; row < rows; ++row) {
    float* into = out.data() + row * columns;
    std::copy(numeric.begin() + row * num_numeric_, numeric.begin() + (row + 1) * num_numeric_,
              into);
    for (int feature = 0; feature < categorical; ++feature) {
      into[hot[row * categorical + feature]] = 1.0f;
    }
  }
  return out;
}

void DenseEncoder::Write(ByteWriter& writer) const {
  writer.Put<std::int32_t>(num_numeric_);
  writer.PutVector(mean_);
  writer.PutVector(scale_);
  for (const std::vector<double>& knots : knots_) writer.PutVector(knots);
  writer.PutVector(first_column_);
  writer.PutVector(kept_codes_);
  writer.Put<std::int64_t>(one_hot_columns_);
  writer.Put<std::uint8_t>(one_hot_ ? 1 : 0);
}

DenseEncoder DenseEncoder::Read(ByteReader& reader) {
  DenseEncoder encoder;
  encoder.num_numeric_ = reader.Get<std::int32_t>();
  if (encoder.num_numeric_ < 0 || encoder.num_numeric_ > (1 << 24))
    reader.Corrupted("implausible feature count");
  encoder.mean_ = reader.GetVector<double>();
  encoder.scale_ = reader.GetVector<double>();
  if (encoder.mean_.size() != std::size_t(encoder.num_numeric_) ||
      encoder.scale_.size() != std::size_t(encoder.num_numeric_)) {
    reader.Corrupted("scaling does not match the features");
  }
  for (int feature = 0; feature < encoder.num_numeric_; ++feature) {
    encoder.knots_.push_back(reader.GetVector<double>());
  }
  encoder.first_column_ = reader.GetVector<std::int64_t>();
  encoder.kept_codes_ = reader.GetVector<std::int32_t>();
  encoder.one_hot_columns_ = reader.Get<std::int64_t>();
  encoder.one_hot_ = reader.Get<std::uint8_t>() != 0;
  if (encoder.one_hot_columns_ < 0 || encoder.one_hot_columns_ > (std::int64_t(1) << 24) ||
      (!encoder.kept_codes_.empty() && encoder.kept_codes_.back() != -1)) {
    reader.Corrupted("implausible one-hot columns");
  }
  return encoder;
}

}  // namespace tabforge::models

// Pieces shared by the metric implementation files; not part of the public interface.
// metric.cc validates every input once and then calls one of the functions below, so they
// may assume a well-formed MetricInput (sizes agree, class indices in range, probabilities
// in [0, 1], weights non-negative with a positive sum). They still throw InvalidInput for data
// on which their metric is undefined (e.g. one class present for roc_auc).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "metrics/metric.h"

namespace tabforge::metrics::internal {

// One validated metric computation.
struct MetricInput {
  std::string_view name;            // canonical metric name, for error messages
  std::span<const double> y_true;   // n class indices (as doubles) or regression targets
  std::span<const double> values;   // classification: row-major n x num_classes; else n values
  int num_classes = 1;              // 1 for regression, >= 2 for classification
  std::span<const double> weights;  // empty (unit weights) or n non-negative weights
  MetricParams params;

  std::size_t rows() const { return y_true.size(); }
  double Weight(std::size_t row) const { return weights.empty() ? 1.0 : weights[row]; }
  // The true class of `row`. Classification only.
  int Label(std::size_t row) const { return static_cast<int>(y_true[row]); }
  // Probability of class `label` in `row`. Classification only.
  double Proba(std::size_t row, int label) const {
    return values[row * static_cast<std::size_t>(num_classes) + static_cast<std::size_t>(label)];
  }
};

// Every metric has this signature; the registry table in metric.cc maps names to them.
using ScoreFn = double (*)(const MetricInput& input);

// Which quantity of the precision/recall/F1 family to report.
enum class PrfScore { kPrecision, kRecall, kF1 };

// How per-class scores are combined, as sklearn's `average` argument:
//   kBinary    class 1 only (sklearn's average="binary", pos_label=1)
//   kMacro     unweighted mean over the classes seen in y_true or in the predictions
//   kMicro     the score of the pooled counts over all classes
//   kWeighted  mean over classes weighted by each class's (weighted) true count
enum class Averaging { kBinary, kMacro, kMicro, kWeighted };

// classification.cc: label metrics use the argmax of each probability row.
double Accuracy(const MetricInput& input);
double BalancedAccuracy(const MetricInput& input);
double LogLoss(const MetricInput& input);
double Mcc(const MetricInput& input);
double PrecisionRecallF1(const MetricInput& input, PrfScore score, Averaging averaging);

// ranking.cc: metrics of how the probabilities order the rows.
double RocAuc(const MetricInput& input);
double RocAucOvr(const MetricInput& input);
double AveragePrecision(const MetricInput& input);

// regression.cc: y_true and values are n targets and n predictions.
double RootMeanSquaredError(const MetricInput& input);
double MeanSquaredError(const MetricInput& input);
double MeanAbsoluteError(const MetricInput& input);
double MedianAbsoluteError(const MetricInput& input);
double R2(const MetricInput& input);
double PearsonR(const MetricInput& input);
double SpearmanR(const MetricInput& input);
double MeanAbsolutePercentageError(const MetricInput& input);
double PinballLoss(const MetricInput& input);

}  // namespace tabforge::metrics::internal

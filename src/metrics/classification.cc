// Metrics of the argmax labels (all from one pass of weighted per-class counts) and log loss.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "metrics/metric_internal.h"

namespace tabforge::metrics::internal {
namespace {

// sklearn 1.2's log_loss clip: probabilities are moved into [kLogLossEps, 1 - kLogLossEps].
constexpr double kLogLossEps = 1e-15;

// Weighted counts per class over one argmax pass; everything the label metrics need
// (none of them needs the full confusion matrix).
struct ClassCounts {
  std::vector<double> true_weight;  // total weight of rows whose true class is c
  std::vector<double> pred_weight;  // total weight of rows predicted as c
  std::vector<double> hit_weight;   // total weight of rows both true and predicted c
  std::vector<bool> seen;           // c occurs in y_true or in the predictions, at any weight
};

// The most probable class of `row`; the lowest index wins a tie, as numpy's argmax.
int PredictedLabel(const MetricInput& input, std::size_t row) {
  int best = 0;
  for (int label = 1; label < input.num_classes; ++label) {
    if (input.Proba(row, label) > input.Proba(row, best)) best = label;
  }
  return best;
}

ClassCounts CountClasses(const MetricInput& input) {
  const auto num_classes = static_cast<std::size_t>(input.num_classes);
  ClassCounts counts{std::vector<double>(num_classes, 0.0), std::vector<double>(num_classes, 0.0),
                     std::vector<double>(num_classes, 0.0), std::vector<bool>(num_classes, false)};
  for (std::size_t row = 0; row < input.rows(); ++row) {
    const auto actual = static_cast<std::size_t>(input.Label(row));
    const auto predicted = static_cast<std::size_t>(PredictedLabel(input, row));
    const double weight = input.Weight(row);
    counts.true_weight[actual] += weight;
    counts.pred_weight[predicted] += weight;
    if (actual == predicted) counts.hit_weight[actual] += weight;
    counts.seen[actual] = true;
    counts.seen[predicted] = true;
  }
  return counts;
}

double Sum(const std::vector<double>& values) {
  double total = 0.0;
  for (double value : values) total += value;
  return total;
}

double Dot(const std::vector<double>& left, const std::vector<double>& right) {
  double total = 0.0;
  for (std::size_t index = 0; index < left.size(); ++index) total += left[index] * right[index];
  return total;
}

// numerator / denominator, or 0 when the denominator is 0 (sklearn's zero_division="warn").
double DivideOrZero(double numerator, double denominator) {
  return denominator == 0.0 ? 0.0 : numerator / denominator;
}

// Precision, recall or F1 of one class (or of pooled counts) from its three weighted counts.
double ClassScore(PrfScore score, double hits, double predicted, double actual) {
  switch (score) {
    case PrfScore::kPrecision:
      return DivideOrZero(hits, predicted);
    case PrfScore::kRecall:
      return DivideOrZero(hits, actual);
    case PrfScore::kF1:
      // sklearn's (1 + beta^2) tp / (beta^2 (tp + fn) + (tp + fp)) with beta = 1.
      return DivideOrZero(2.0 * hits, actual + predicted);
  }
  return 0.0;
}

}  // namespace

double Accuracy(const MetricInput& input) {
  const ClassCounts counts = CountClasses(input);
  return Sum(counts.hit_weight) / Sum(counts.true_weight);
}

double BalancedAccuracy(const MetricInput& input) {
  // The mean per-class recall over the classes with weight in y_true; sklearn drops the
  // others (their recall is 0/0) with a warning.
  const ClassCounts counts = CountClasses(input);
  double recall_sum = 0.0;
  int classes_used = 0;
  for (std::size_t label = 0; label < counts.true_weight.size(); ++label) {
    if (counts.true_weight[label] == 0.0) continue;
    recall_sum += counts.hit_weight[label] / counts.true_weight[label];
    ++classes_used;
  }
  return recall_sum / classes_used;
}

double LogLoss(const MetricInput& input) {
  // As sklearn 1.2: clip every probability, renormalise the row by its clipped sum, then take
  // the weighted mean of -log(probability of the true class).
  double loss_sum = 0.0;
  double weight_sum = 0.0;
  for (std::size_t row = 0; row < input.rows(); ++row) {
    double clipped_sum = 0.0;
    for (int label = 0; label < input.num_classes; ++label) {
      clipped_sum += std::clamp(input.Proba(row, label), kLogLossEps, 1.0 - kLogLossEps);
    }
    const double clipped_true =
        std::clamp(input.Proba(row, input.Label(row)), kLogLossEps, 1.0 - kLogLossEps);
    const double weight = input.Weight(row);
    loss_sum += weight * -std::log(clipped_true / clipped_sum);
    weight_sum += weight;
  }
  return loss_sum / weight_sum;
}

double Mcc(const MetricInput& input) {
  // sklearn's multiclass form of the Matthews coefficient (for two classes it equals
  // (tp tn - fp fn) / sqrt(...)), defined as 0 when either marginal is constant.
  const ClassCounts counts = CountClasses(input);
  const double hits = Sum(counts.hit_weight);
  const double total = Sum(counts.pred_weight);
  const double cov_true_pred = hits * total - Dot(counts.true_weight, counts.pred_weight);
  const double cov_pred_pred = total * total - Dot(counts.pred_weight, counts.pred_weight);
  const double cov_true_true = total * total - Dot(counts.true_weight, counts.true_weight);
  const double denominator = cov_pred_pred * cov_true_true;
  return denominator == 0.0 ? 0.0 : cov_true_pred / std::sqrt(denominator);
}

double PrecisionRecallF1(const MetricInput& input, PrfScore score, Averaging averaging) {
  const ClassCounts counts = CountClasses(input);
  switch (averaging) {
    case Averaging::kBinary:
      return ClassScore(score, counts.hit_weight[1], counts.pred_weight[1], counts.true_weight[1]);
    case Averaging::kMicro:
      return ClassScore(score, Sum(counts.hit_weight), Sum(counts.pred_weight),
                        Sum(counts.true_weight));
    case Averaging::kMacro:
    case Averaging::kWeighted:
      break;
  }
  // sklearn averages over unique_labels(y_true, y_pred): the classes seen anywhere, whatever
  // their weight. A class seen only in zero-weight rows thus adds a 0 to the macro mean.
  double score_sum = 0.0;
  double weight_sum = 0.0;
  for (std::size_t label = 0; label < counts.seen.size(); ++label) {
    if (!counts.seen[label]) continue;
    const double class_score = ClassScore(score, counts.hit_weight[label],
                                          counts.pred_weight[label], counts.true_weight[label]);
    const double class_weight = averaging == Averaging::kMacro ? 1.0 : counts.true_weight[label];
    score_sum += class_weight * class_score;
    weight_sum += class_weight;
  }
  return DivideOrZero(score_sum, weight_sum);
}

}  // namespace tabforge::metrics::internal

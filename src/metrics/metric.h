// Evaluation metrics under AutoGluon's names, each computed exactly as scikit-learn computes
// it (see each metric's entry in metric.cc for the scikit-learn function it matches), with the
// direction it optimises. Scores are raw values (a log loss is returned as a positive loss, not
// negated); IsBetter compares two scores of one metric by its direction.
//
// Metrics: accuracy, balanced_accuracy, log_loss, roc_auc, roc_auc_ovr, average_precision,
// f1, precision, recall, f1/precision/recall _macro/_micro/_weighted, mcc,
// root_mean_squared_error, mean_squared_error, mean_absolute_error, median_absolute_error, r2,
// pearsonr, spearmanr, mean_absolute_percentage_error, pinball_loss.
//
// Conventions shared with scikit-learn: precision/recall/F1 of an empty class are 0 (its
// zero_division default); *_macro averages run over the classes seen in y_true or in the
// predictions; roc_auc_ovr on a binary problem is roc_auc; log_loss clips probabilities to
// [1e-15, 1 - 1e-15] and renormalises each row (sklearn 1.2 with eps=1e-15); r2 of a constant
// target is 1 when predicted exactly, else 0 (force_finite).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace tabforge::metrics {

// What a metric is and where it applies. One instance per metric, owned by the registry and
// valid for the life of the program.
struct MetricInfo {
  std::string_view name;    // canonical (AutoGluon) name, e.g. "roc_auc"
  bool greater_is_better;   // true for scores (accuracy, r2), false for losses (log_loss, rmse)
  bool needs_proba;         // reads class probabilities rather than their argmax labels
                            // (log_loss, roc_auc, roc_auc_ovr, average_precision)
  bool for_classification;  // valid for binary problems, and for multiclass unless binary_only
  bool binary_only;         // classification metric defined for two classes only
                            // (roc_auc, average_precision, f1, precision, recall, mcc)
  bool for_regression;      // valid for regression problems
  bool supports_weights;    // accepts per-row sample weights (false: pearsonr, spearmanr)
};

// The model's predictions for n rows, borrowed from the caller for the duration of the call.
//   classification: row-major n x num_classes class probabilities, each in [0, 1], each row
//     summing to 1 (within 1e-5). Binary problems have num_classes = 2 and the positive class
//     is index 1. Label metrics use the argmax of each row; ties go to the lowest class index.
//   regression: n predicted values, num_classes = 1.
// num_classes also fixes the problem type: 1 regression, 2 binary, 3 or more multiclass.
struct Predictions {
  std::span<const double> values;
  int num_classes = 1;
};

// Options some metrics read; the others ignore them.
struct MetricParams {
  double quantile = 0.5;  // pinball_loss's target quantile (sklearn's alpha), in (0, 1)
};

// The metric called `name`, which may be a canonical name or an alias (e.g. "rmse", "mse",
// "mae", "mape", "acc", "nll", "roc_auc_ovr_macro"). Matching is exact and case-sensitive.
// Throws InvalidInput listing every canonical name when `name` is unknown.
const MetricInfo& GetMetric(std::string_view name);

// Every canonical metric name, in registry order (aliases excluded). The views point into
// static storage.
std::vector<std::string_view> MetricNames();

// Whether `info` can score a problem of `type`: binary needs for_classification, multiclass
// also needs !binary_only, regression needs for_regression.
bool IsValidFor(const MetricInfo& info, ProblemType type);

// AutoGluon's default eval metric: "accuracy" for binary and multiclass problems,
// "root_mean_squared_error" for regression.
std::string_view DefaultMetric(ProblemType type);

// The value of metric `name` (canonical or alias) on n rows.
//   y_true: n entries. Classification: the class index 0..num_classes-1 stored exactly as a
//     double. Regression: the target value (finite).
//   pred: see Predictions; values.size() must be n * num_classes.
//   weights: empty means unit weights; otherwise n finite non-negative weights with a positive
//     sum. A row of weight 0 counts as absent, except that (as in scikit-learn) the label set
//     the *_macro averages run over is every class seen in y_true or in the argmax predictions,
//     whatever the weights.
//   params: read by pinball_loss only.
// Throws InvalidInput, naming the metric and the remedy, when: the name is unknown; n is 0;
// sizes disagree; the metric does not fit the problem type (e.g. roc_auc on multiclass: use
// roc_auc_ovr); a class index is out of range or not an integer; a probability is outside
// [0, 1] or a row does not sum to 1; a value is not finite; a weight is negative or all are 0;
// or the metric is undefined on this data (roc_auc with one class present, pearsonr or
// spearmanr with a constant input, r2/pearsonr/spearmanr with fewer than 2 rows).
// Throws NotSupported when weights are given to a metric without supports_weights.
double Score(std::string_view name, std::span<const double> y_true, const Predictions& pred,
             std::span<const double> weights = {}, const MetricParams& params = {});

// Whether `candidate` is strictly better than `incumbent` under `info`'s direction. Equal
// scores are not better. A NaN on either side compares false, so start a running best at the
// metric's worst value (-inf for greater_is_better, +inf otherwise), not at NaN.
bool IsBetter(const MetricInfo& info, double candidate, double incumbent);

}  // namespace tabforge::metrics

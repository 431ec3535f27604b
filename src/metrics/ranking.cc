// Metrics of how one class's probabilities rank the rows: ROC AUC (binary and one-vs-rest)
// and average precision. Both walk the same curve of cumulative weights over distinct scores.

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "metrics/metric_internal.h"

namespace tabforge::metrics::internal {
namespace {

// Total weight of the positive and negative rows whose score is at or above one threshold.
struct CurvePoint {
  double positive = 0.0;
  double negative = 0.0;
};

// One point per distinct value of the class-`score_label` probability, from the highest down;
// rows with equal scores share a point (sklearn's _binary_clf_curve). A row is positive when
// its true class is `positive_label`. The last point holds the totals.
std::vector<CurvePoint> RankingCurve(const MetricInput& input, int score_label,
                                     int positive_label) {
  std::vector<std::size_t> order(input.rows());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t left, std::size_t right) {
    return input.Proba(left, score_label) > input.Proba(right, score_label);
  });
  std::vector<CurvePoint> curve;
  CurvePoint running;
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const std::size_t row = order[rank];
    const double weight = input.Weight(row);
    if (input.Label(row) == positive_label) {
      running.positive += weight;
    } else {
      running.negative += weight;
    }
    const bool last_of_tie =
        rank + 1 == order.size() ||
        input.Proba(order[rank + 1], score_label) != input.Proba(row, score_label);
    if (last_of_tie) curve.push_back(running);
  }
  return curve;
}

// Trapezoidal area under the ROC curve through (0, 0) and the curve's points, each scaled by
// the totals; a tie between a positive and a negative thus counts one half. Precondition: both
// totals are positive.
double AreaUnderRoc(const std::vector<CurvePoint>& curve) {
  double area = 0.0;
  CurvePoint previous;
  for (const CurvePoint& point : curve) {
    area += (point.negative - previous.negative) * (point.positive + previous.positive) / 2.0;
    previous = point;
  }
  return area / (previous.positive * previous.negative);
}

// Throws InvalidInput unless the curve has weight on both sides, which the AUC needs.
void RequireBothSides(const MetricInput& input, const CurvePoint& totals, int positive_label) {
  if (totals.positive > 0.0 && totals.negative > 0.0) return;
  if (input.num_classes == 2) {
    throw InvalidInput(fmt::format(
        "metric '{}' is undefined when y_true holds one class only (every row with positive "
        "weight is class {}); evaluate on data containing both classes, or use log_loss",
        input.name, totals.positive > 0.0 ? 1 : 0));
  }
  throw InvalidInput(fmt::format(
      "metric '{}' needs every class in y_true, but class {} has no row with positive weight, "
      "so its one-vs-rest AUC is undefined; evaluate on data containing all {} classes, or use "
      "log_loss",
      input.name, positive_label, input.num_classes));
}

}  // namespace

double RocAuc(const MetricInput& input) {
  const std::vector<CurvePoint> curve = RankingCurve(input, 1, 1);
  RequireBothSides(input, curve.back(), 1);
  return AreaUnderRoc(curve);
}

double RocAucOvr(const MetricInput& input) {
  // sklearn scores a binary y_true with multi_class="ovr" as plain binary AUC of column 1.
  if (input.num_classes == 2) return RocAuc(input);
  double auc_sum = 0.0;
  for (int label = 0; label < input.num_classes; ++label) {
    const std::vector<CurvePoint> curve = RankingCurve(input, label, label);
    RequireBothSides(input, curve.back(), label);
    auc_sum += AreaUnderRoc(curve);
  }
  return auc_sum / input.num_classes;
}

double AveragePrecision(const MetricInput& input) {
  // sum over thresholds of (recall gained) x (precision there); a tied group is one threshold.
  const std::vector<CurvePoint> curve = RankingCurve(input, 1, 1);
  const double total_positive = curve.back().positive;
  if (total_positive <= 0.0) {
    throw InvalidInput(fmt::format(
        "metric '{}' is undefined without positive rows: no row with positive weight has "
        "class 1 in y_true; evaluate on data containing positives, or use log_loss",
        input.name));
  }
  double precision_sum = 0.0;
  double previous_positive = 0.0;
  for (const CurvePoint& point : curve) {
    const double gained = point.positive - previous_positive;
    if (gained > 0.0) precision_sum += gained * point.positive / (point.positive + point.negative);
    previous_positive = point.positive;
  }
  return precision_sum / total_positive;
}

}  // namespace tabforge::metrics::internal

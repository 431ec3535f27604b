// Regression metrics: weighted means of a per-row loss, the weighted median absolute error,
// r2, and the Pearson and Spearman correlations.

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <span>
#include <vector>

#include "core/error.h"
#include "metrics/metric_internal.h"

namespace tabforge::metrics::internal {
namespace {

// The weighted mean over rows of row_loss(target, prediction), as np.average(loss, weights).
template <typename RowLoss>
double MeanLoss(const MetricInput& input, RowLoss row_loss) {
  double loss_sum = 0.0;
  double weight_sum = 0.0;
  for (std::size_t row = 0; row < input.rows(); ++row) {
    const double weight = input.Weight(row);
    loss_sum += weight * row_loss(input.y_true[row], input.values[row]);
    weight_sum += weight;
  }
  return loss_sum / weight_sum;
}

void RequireTwoRows(const MetricInput& input) {
  if (input.rows() >= 2) return;
  throw InvalidInput(fmt::format("metric '{}' needs at least 2 rows, got {}; evaluate on more data",
                                 input.name, input.rows()));
}

// Throws InvalidInput when every entry of `series` is the same, naming which input it is.
void RequireVaries(const MetricInput& input, std::span<const double> series, const char* what) {
  const bool constant = std::all_of(series.begin(), series.end(),
                                    [&](double value) { return value == series.front(); });
  if (!constant) return;
  throw InvalidInput(fmt::format(
      "metric '{}' is undefined when {} is constant (every value is {}): the correlation "
      "divides by its zero variance; use r2 or root_mean_squared_error instead",
      input.name, what, series.front()));
}

// Pearson's correlation of two series of equal length, clamped to [-1, 1] as scipy does.
double Correlation(std::span<const double> first, std::span<const double> second) {
  const double count = static_cast<double>(first.size());
  const double first_mean = std::accumulate(first.begin(), first.end(), 0.0) / count;
  const double second_mean = std::accumulate(second.begin(), second.end(), 0.0) / count;
  double cross = 0.0;
  double first_square = 0.0;
  double second_square = 0.0;
  for (std::size_t row = 0; row < first.size(); ++row) {
    const double first_centred = first[row] - first_mean;
    const double second_centred = second[row] - second_mean;
    cross += first_centred * second_centred;
    first_square += first_centred * first_centred;
    second_square += second_centred * second_centred;
  }
  return std::clamp(cross / std::sqrt(first_square * second_square), -1.0, 1.0);
}

// Ranks 1..n of `values`; tied values share the mean of the ranks they span (scipy's
// rankdata(method="average")).
std::vector<double> AverageRanks(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t left, std::size_t right) {
    return values[left] < values[right];
  });
  std::vector<double> ranks(values.size());
  std::size_t tie_start = 0;
  while (tie_start < order.size()) {
    std::size_t tie_end = tie_start + 1;
    while (tie_end < order.size() && values[order[tie_end]] == values[order[tie_start]]) ++tie_end;
    // Positions tie_start..tie_end-1 hold ranks tie_start+1..tie_end; their mean:
    const double shared_rank = static_cast<double>(tie_start + 1 + tie_end) / 2.0;
    for (std::size_t rank = tie_start; rank < tie_end; ++rank) ranks[order[rank]] = shared_rank;
    tie_start = tie_end;
  }
  return ranks;
}

// The weighted median of `values` by the averaged inverted CDF, as sklearn >= 1.8's
// _weighted_percentile(values, weights, 50, average=True): sorted ascending, the first value
// whose cumulative weight reaches half the total; when it reaches exactly half (within
// DBL_EPSILON), the mean of that value and the next one with positive weight. With unit
// weights this is the ordinary median.
double WeightedMedian(const MetricInput& input, std::span<const double> values) {
  const std::size_t count = values.size();
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t left, std::size_t right) {
    return values[left] < values[right];
  });
  std::vector<double> cumulative(count);
  double running = 0.0;
  for (std::size_t rank = 0; rank < count; ++rank) {
    running += input.Weight(order[rank]);
    cumulative[rank] = running;
  }
  const double half = 0.5 * running;
  const std::size_t at = std::min<std::size_t>(
      std::lower_bound(cumulative.begin(), cumulative.end(), half) - cumulative.begin(), count - 1);
  if (cumulative[at] - half > DBL_EPSILON) return values[order[at]];
  std::size_t next = std::min(at + 1, count - 1);
  if (input.Weight(order[next]) == 0.0) {
    // Skip zero-weight values: the next value is the first whose cumulative weight grows.
    next =
        std::upper_bound(cumulative.begin(), cumulative.end(), cumulative[at]) - cumulative.begin();
    if (next >= count) next = at;
  }
  return (values[order[at]] + values[order[next]]) / 2.0;
}

}  // namespace

double MeanSquaredError(const MetricInput& input) {
  return MeanLoss(input, [](double target, double prediction) {
    return (target - prediction) * (target - prediction);
  });
}

double RootMeanSquaredError(const MetricInput& input) { return std::sqrt(MeanSquaredError(input)); }

double MeanAbsoluteError(const MetricInput& input) {
  return MeanLoss(input,
                  [](double target, double prediction) { return std::abs(target - prediction); });
}

double MedianAbsoluteError(const MetricInput& input) {
  std::vector<double> errors(input.rows());
  for (std::size_t row = 0; row < input.rows(); ++row) {
    errors[row] = std::abs(input.values[row] - input.y_true[row]);
  }
  return WeightedMedian(input, errors);
}

double MeanAbsolutePercentageError(const MetricInput& input) {
  // A zero target divides by DBL_EPSILON instead of 0, as sklearn: huge but finite.
  return MeanLoss(input, [](double target, double prediction) {
    return std::abs(prediction - target) / std::max(std::abs(target), DBL_EPSILON);
  });
}

double PinballLoss(const MetricInput& input) {
  const double quantile = input.params.quantile;
  if (!(quantile > 0.0 && quantile < 1.0)) {
    throw InvalidInput(fmt::format("metric '{}' needs MetricParams::quantile in (0, 1), got {}",
                                   input.name, quantile));
  }
  return MeanLoss(input, [quantile](double target, double prediction) {
    const double residual = target - prediction;
    return residual >= 0.0 ? quantile * residual : (quantile - 1.0) * residual;
  });
}

double R2(const MetricInput& input) {
  RequireTwoRows(input);
  const double target_mean = MeanLoss(input, [](double target, double) { return target; });
  const double residual_mean = MeanSquaredError(input);
  const double target_variance = MeanLoss(input, [target_mean](double target, double) {
    return (target - target_mean) * (target - target_mean);
  });
  // sklearn's force_finite: a constant target scores 1 when predicted exactly, else 0.
  if (target_variance == 0.0) return residual_mean == 0.0 ? 1.0 : 0.0;
  return 1.0 - residual_mean / target_variance;
}

double PearsonR(const MetricInput& input) {
  RequireTwoRows(input);
  RequireVaries(input, input.y_true, "y_true");
  RequireVaries(input, input.values, "the prediction");
  return Correlation(input.y_true, input.values);
}

double SpearmanR(const MetricInput& input) {
  RequireTwoRows(input);
  RequireVaries(input, input.y_true, "y_true");
  RequireVaries(input, input.values, "the prediction");
  return Correlation(AverageRanks(input.y_true), AverageRanks(input.values));
}

}  // namespace tabforge::metrics::internal

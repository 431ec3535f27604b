#include "ensemble/weighted_ensemble.h"

#include <limits>

#include "core/error.h"
#include "metrics/metric.h"

namespace tabforge::ensemble {

EnsembleWeights SelectEnsemble(const std::vector<std::span<const double>>& members, int outputs,
                               std::span<const double> labels, const std::string& metric,
                               int ensemble_size) {
  TFG_CHECK(!members.empty(), "an ensemble needs members");
  TFG_CHECK(ensemble_size >= 1, "ensemble size {}", ensemble_size);
  const std::size_t values = labels.size() * static_cast<std::size_t>(outputs);
  for (const auto& member : members) {
    TFG_CHECK(member.size() == values, "member has {} values for {} rows x {} outputs",
              member.size(), labels.size(), outputs);
  }
  const metrics::MetricInfo& info = metrics::GetMetric(metric);
  // Label metrics break their ties by log loss (a proper score of the probabilities).
  const bool tie_break = info.for_classification && !info.needs_proba && outputs >= 2;
  const double kUnscored = std::numeric_limits<double>::infinity();
  auto log_loss = [&](std::span<const double> blend) {
    return metrics::Score("log_loss", labels, {blend, outputs});
  };
  std::vector<double> sum(values, 0.0), candidate(values);
  std::vector<int> counts(members.size(), 0), best_counts;
  double best_score = info.greater_is_better ? -std::numeric_limits<double>::infinity()
                                             : std::numeric_limits<double>::infinity();
  double best_loss = kUnscored;
  for (int step = 1; step <= ensemble_size; ++step) {
    int chosen = -1;
    double chosen_score = 0;
    double chosen_loss = kUnscored;  // computed only when a tie asks for it
    for (std::size_t m = 0; m < members.size(); ++m) {
      for (std::size_t i = 0; i < values; ++i) candidate[i] = (sum[i] + members[m][i]) / step;
      const double score = metrics::Score(metric, labels, {candidate, outputs});
      if (chosen < 0 || metrics::IsBetter(info, score, chosen_score)) {
        chosen = static_cast<int>(m);
        chosen_score = score;
        chosen_loss = kUnscored;
      } else if (tie_break && score == chosen_score) {
        if (chosen_loss == kUnscored) {
          std::vector<double> previous(values);
          for (std::size_t i = 0; i < values; ++i) {
            previous[i] = (sum[i] + members[chosen][i]) / step;
          }
          chosen_loss = log_loss(previous);
        }
        const double loss = log_loss(candidate);
        if (loss < chosen_loss) {
          chosen = static_cast<int>(m);
          chosen_loss = loss;
        }
      }
    }
    for (std::size_t i = 0; i < values; ++i) sum[i] += members[chosen][i];
    ++counts[chosen];
    bool better = best_counts.empty() || metrics::IsBetter(info, chosen_score, best_score);
    if (!better && tie_break && chosen_score == best_score) {
      if (chosen_loss == kUnscored) {
        for (std::size_t i = 0; i < values; ++i) candidate[i] = sum[i] / step;
        chosen_loss = log_loss(candidate);
      }
      better = chosen_loss < best_loss;
    }
    if (better) {
      if (tie_break && chosen_loss == kUnscored) {
        for (std::size_t i = 0; i < values; ++i) candidate[i] = sum[i] / step;
        chosen_loss = log_loss(candidate);
      }
      best_score = chosen_score;
      best_loss = chosen_loss;
      best_counts = counts;
    }
  }
  EnsembleWeights result;
  int total = 0;
  for (int count : best_counts) total += count;
  for (int count : best_counts) result.weights.push_back(double(count) / total);
  result.score = best_score;
  return result;
}

std::vector<double> BlendPredictions(const std::vector<std::span<const double>>& members,
                                     std::span<const double> weights) {
  TFG_CHECK(!members.empty() && members.size() == weights.size(), "{} members, {} weights",
            members.size(), weights.size());
  std::vector<double> out(members[0].size(), 0.0);
  for (std::size_t m = 0; m < members.size(); ++m) {
    if (weights[m] == 0) continue;
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += weights[m] * members[m][i];
  }
  return out;
}

}  // namespace tabforge::ensemble

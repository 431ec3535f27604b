#include "ensemble/weighted_ensemble.h"

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
  // Whether a blend of (score, log loss) beats one of (best_score, best_loss).
  auto beats = [&](double score, double loss, double best_score, double best_loss) {
    return metrics::IsBetter(info, score, best_score) ||
           (tie_break && score == best_score && loss < best_loss);
  };
  std::vector<double> sum(values, 0.0), candidate(values);
  std::vector<int> counts(members.size(), 0), best_counts;
  double best_score = 0, best_loss = 0;
  for (int step = 1; step <= ensemble_size; ++step) {
    int chosen = -1;
    double chosen_score = 0, chosen_loss = 0;
    for (std::size_t m = 0; m < members.size(); ++m) {
      for (std::size_t i = 0; i < values; ++i) candidate[i] = (sum[i] + members[m][i]) / step;
      const double score = metrics::Score(metric, labels, {candidate, outputs});
      const double loss =
          tie_break ? metrics::Score("log_loss", labels, {candidate, outputs}) : 0.0;
      if (chosen < 0 || beats(score, loss, chosen_score, chosen_loss)) {
        chosen = static_cast<int>(m);
        chosen_score = score;
        chosen_loss = loss;
      }
    }
    for (std::size_t i = 0; i < values; ++i) sum[i] += members[chosen][i];
    ++counts[chosen];
    if (best_counts.empty() || beats(chosen_score, chosen_loss, best_score, best_loss)) {
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

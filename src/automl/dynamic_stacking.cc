#include "automl/dynamic_stacking.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "automl/presets.h"
#include "core/error.h"
#include "data/problem_type.h"
#include "data/table.h"
#include "ensemble/folds.h"
#include "metrics/metric.h"

namespace tabforge::automl {
namespace {

constexpr std::uint64_t kCheckStream = 0x64797374;  // "dyst"
constexpr double kHoldoutFraction = 1.0 / 9.0;      // AutoGluon's

// The weighted ensemble over level-1 models (WeightedEnsemble_L2) sees no stacked features.
bool Stacked(const LeaderboardRow& row) {
  const bool ensemble = std::string_view(row.model).starts_with(kEnsemblePrefix);
  return row.stack_level > (ensemble ? 2 : 1);
}

}  // namespace

StackingVerdict JudgeStacking(const std::vector<LeaderboardRow>& board,
                              const std::string& eval_metric) {
  const metrics::MetricInfo& metric = metrics::GetMetric(eval_metric);
  StackingVerdict verdict;
  for (const LeaderboardRow& row : board) {
    if (!row.can_infer || !row.score_val || !row.score_test) continue;
    const LeaderboardRow*& best = Stacked(row) ? verdict.best_stacked : verdict.best_unstacked;
    if (best == nullptr || metrics::IsBetter(metric, *row.score_val, *best->score_val)) {
      best = &row;
    }
  }
  if (verdict.best_unstacked != nullptr && verdict.best_stacked != nullptr) {
    verdict.stacked_overfitting = !metrics::IsBetter(metric, *verdict.best_stacked->score_test,
                                                     *verdict.best_unstacked->score_test);
  }
  return verdict;
}

StackingCheck CheckStacking(const data::Table& train, const std::string& label,
                            const PredictorOptions& predictor_options, const FitOptions& options,
                            const Deadline& deadline, double share, std::uint64_t seed) {
  Stopwatch watch;
  StackingCheck check;
  // Hold out 1/9 of the rows: per label value for classification, so each class keeps its
  // share; at random, keyed by the seed.
  const bool classification =
      data::ParseProblemType(predictor_options.problem_type) != ProblemType::kRegression;
  const data::Column& labels = train.ColumnByName(label);
  std::map<std::string, double> stratum_of;  // label text -> stratum number
  std::vector<double> strata(static_cast<std::size_t>(train.num_rows()), 0.0);
  for (std::int64_t row = 0; classification && row < train.num_rows(); ++row) {
    strata[row] = stratum_of.emplace(labels.CellText(row), double(stratum_of.size())).first->second;
  }
  const std::vector<std::uint8_t> held =
      ensemble::HoldOutRows(strata, kHoldoutFraction, seed, kCheckStream);
  std::vector<std::int64_t> fit_rows, held_rows;
  for (std::int64_t row = 0; row < train.num_rows(); ++row) {
    (held[row] ? held_rows : fit_rows).push_back(row);
  }
  check.holdout_rows = static_cast<std::int64_t>(held_rows.size());
  if (held_rows.size() < 2 || fit_rows.size() < held_rows.size()) {
    check.note = fmt::format("stacking check skipped: {} rows are too few to hold some out",
                             train.num_rows());
    return check;
  }
  const data::Table fit_part = data::SelectRows(train, fit_rows);
  const data::Table held_part = data::SelectRows(train, held_rows);

  FitOptions sub = options;
  sub.dynamic_stacking = 0;
  sub.refit_full = 0;
  sub.tuning_data = nullptr;
  const double left = deadline.SecondsLeft();
  sub.time_limit = left < 1e299 ? std::max(share * left, 1.0) : 0.0;
  PredictorOptions quiet = predictor_options;
  quiet.path.clear();
  quiet.verbosity = predictor_options.verbosity >= 3 ? predictor_options.verbosity : 0;
  std::vector<LeaderboardRow> board;
  try {
    TabularPredictor checker(label, quiet);
    checker.fit(fit_part, sub);
    board = checker.leaderboard(&held_part);
  } catch (const Error& error) {
    check.seconds = watch.Seconds();
    check.note = fmt::format("stacking check failed ({}); stacking kept", error.what());
    return check;
  }
  check.ran = true;
  check.seconds = watch.Seconds();

  const StackingVerdict verdict = JudgeStacking(board, predictor_options.eval_metric);
  if (verdict.best_unstacked == nullptr || verdict.best_stacked == nullptr) {
    check.note = fmt::format(
        "stacking check on {} held-out rows: no {} model was trained in {:.0f} s; stacking kept",
        check.holdout_rows, verdict.best_unstacked == nullptr ? "unstacked" : "stacked",
        check.seconds);
    return check;
  }
  const LeaderboardRow& stacked = *verdict.best_stacked;
  const LeaderboardRow& unstacked = *verdict.best_unstacked;
  check.stacked_overfitting = verdict.stacked_overfitting;
  check.note = fmt::format(
      "stacking check on {} held-out rows ({:.0f} s): best stacked {} {} {:.4f} out of fold, "
      "{:.4f} held out; best unstacked {} {:.4f} / {:.4f}: {}",
      check.holdout_rows, check.seconds, stacked.model, predictor_options.eval_metric,
      *stacked.score_val, *stacked.score_test, unstacked.model, *unstacked.score_val,
      *unstacked.score_test,
      check.stacked_overfitting ? "stacked overfitting, fitting without stacking"
                                : "stacking kept");
  return check;
}

}  // namespace tabforge::automl

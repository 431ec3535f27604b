// Dynamic stacking (AutoGluon's DyStack): whether stacking helps this data, judged before the
// real fit. Stacked models learn from out-of-fold predictions, and their out-of-fold scores can
// flatter them ("stacked overfitting"): a stack may win on its own validation rows and lose on
// new ones. The check fits the same stack on 8/9 of the rows and scores every model on the
// other 1/9, which no model saw. Unless the stack wins on the held-out rows, the real fit goes
// on without stacking.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/timer.h"
#include "tabforge/predictor.h"

namespace tabforge::automl {

struct StackingCheck {
  bool ran = false;                  // false: the check could not run (see note)
  bool stacked_overfitting = false;  // true: fit without stacking
  std::int64_t holdout_rows = 0;
  double seconds = 0;
  std::string note;  // one line saying what was compared and found
};

// The verdict on a leaderboard scored on held-out rows (score_test): among the models with both
// scores, the best unstacked one by out-of-fold score (level-1 models and the weighted ensemble
// over them) against the best stacked one. Stacked overfitting: the stacked one does not score
// better held out. (AutoGluon's rule asks besides that it score better out of fold. The check's
// stack has a quarter of the time, so its out-of-fold scores trail those the real fit's stack
// reaches, and the stack would mostly be kept for failing to win out of fold when the real
// fit's, given the time, wins there; a stack that cannot beat the unstacked models on rows
// neither saw is not kept, at twice the prediction time, on out-of-fold scores that flatter it.)
// Null pointers when a side is empty.
struct StackingVerdict {
  const LeaderboardRow* best_unstacked = nullptr;
  const LeaderboardRow* best_stacked = nullptr;
  bool stacked_overfitting = false;
};
StackingVerdict JudgeStacking(const std::vector<LeaderboardRow>& board,
                              const std::string& eval_metric);

// Fits `options` (a stacked, bagged fit; its time limit is replaced by `share` of the time
// `deadline` leaves) on 8/9 of `train`'s rows, held out at random (stratified by label for
// classification, keyed by `seed`) and judges its leaderboard on the held-out rows
// (JudgeStacking). A fit that fails is reported in the note, with stacked_overfitting false.
StackingCheck CheckStacking(const data::Table& train, const std::string& label,
                            const PredictorOptions& predictor_options, const FitOptions& options,
                            const Deadline& deadline, double share, std::uint64_t seed);

}  // namespace tabforge::automl

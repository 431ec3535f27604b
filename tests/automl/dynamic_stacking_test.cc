#include "automl/dynamic_stacking.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "data/csv_reader.h"
#include "data/table.h"
#include "test_support.h"

namespace tabforge::automl {
namespace {

LeaderboardRow Row(const std::string& model, int level, double val, double test) {
  LeaderboardRow row;
  row.model = model;
  row.stack_level = level;
  row.score_val = val;
  row.score_test = test;
  return row;
}

// By hand: the best out-of-fold model of each side is compared held out, and the stack is kept
// only when it wins there.
TEST(DynamicStacking, StackingIsKeptOnlyWhenTheStackWinsOnHeldOutRows) {
  // WeightedEnsemble_L2 (level 2) blends level-1 models only: it is on the unstacked side.
  const std::vector<LeaderboardRow> overfit = {
      Row("GBM_BAG_L1", 1, 0.870, 0.868), Row("WeightedEnsemble_L2", 2, 0.872, 0.869),
      Row("GBM_BAG_L2", 2, 0.875, 0.866), Row("WeightedEnsemble_L3", 3, 0.874, 0.867)};
  StackingVerdict verdict = JudgeStacking(overfit, "accuracy");
  ASSERT_NE(verdict.best_unstacked, nullptr);
  ASSERT_NE(verdict.best_stacked, nullptr);
  EXPECT_EQ(verdict.best_unstacked->model, "WeightedEnsemble_L2");
  EXPECT_EQ(verdict.best_stacked->model, "GBM_BAG_L2");
  EXPECT_TRUE(verdict.stacked_overfitting);
  // Equal held out is no gain either.
  std::vector<LeaderboardRow> tie = overfit;
  tie[2].score_test = 0.869;
  EXPECT_TRUE(JudgeStacking(tie, "accuracy").stacked_overfitting);
  // The stack holds up held out: kept.
  std::vector<LeaderboardRow> helps = overfit;
  helps[2].score_test = 0.871;
  EXPECT_FALSE(JudgeStacking(helps, "accuracy").stacked_overfitting);
  // Behind out of fold and held out (a stack short of time in the check): not kept.
  std::vector<LeaderboardRow> behind = overfit;
  behind[2].score_val = 0.871;
  behind[3].score_val = 0.871;
  verdict = JudgeStacking(behind, "accuracy");
  EXPECT_EQ(verdict.best_stacked->model, "GBM_BAG_L2");
  EXPECT_TRUE(verdict.stacked_overfitting);
  // Behind out of fold but ahead held out: kept.
  behind[2].score_test = 0.870;
  EXPECT_FALSE(JudgeStacking(behind, "accuracy").stacked_overfitting);
  // The held-out scores compared are those of each side's best out-of-fold model, not each
  // side's best held-out score: a stacked model that wins held out but not out of fold does not
  // count.
  std::vector<LeaderboardRow> hidden = overfit;
  hidden[3].score_test = 0.880;
  EXPECT_TRUE(JudgeStacking(hidden, "accuracy").stacked_overfitting);
  // Losses run the other way: lower is better.
  const std::vector<LeaderboardRow> losses = {Row("GBM_BAG_L1", 1, 0.30, 0.31),
                                              Row("GBM_BAG_L2", 2, 0.28, 0.32)};
  EXPECT_TRUE(JudgeStacking(losses, "log_loss").stacked_overfitting);
  EXPECT_FALSE(JudgeStacking(losses, "accuracy").stacked_overfitting);
  // Without stacked models (or without held-out scores) there is nothing to judge.
  std::vector<LeaderboardRow> unscored = overfit;
  unscored[2].score_test.reset();
  unscored[3].score_test.reset();
  verdict = JudgeStacking(unscored, "accuracy");
  EXPECT_EQ(verdict.best_stacked, nullptr);
  EXPECT_FALSE(verdict.stacked_overfitting);
}

// A stacked fit with the check: 1/9 of each class is held out, the summary says what was
// found, and the fit follows it (stacked models exactly when stacking was kept).
TEST(DynamicStacking, AStackedFitChecksFirstAndFollowsTheVerdict) {
  TFG_REQUIRE_DATASETS();
  const data::Table adult = data::ReadCsv(testing::DatasetPath("adult_train.csv.gz"));
  std::vector<std::int64_t> rows;
  for (std::int64_t row = 0; row < 2700; ++row) rows.push_back(row);
  const data::Table train = data::SelectRows(adult, rows);
  std::map<std::string, std::int64_t> class_rows;
  for (std::int64_t row = 0; row < train.num_rows(); ++row) {
    ++class_rows[train.ColumnByName("class").CellText(row)];
  }
  std::int64_t held_out = 0;
  for (const auto& [value, count] : class_rows) held_out += std::llround(count / 9.0);

  PredictorOptions quiet;
  quiet.verbosity = 0;
  FitOptions options;
  options.hyperparameters =
      R"({"GBM": {"num_iterations": 60}, "LR": {}, "KNN": {"n_neighbors": 5}})";
  options.num_bag_folds = 3;
  options.num_stack_levels = 1;
  options.dynamic_stacking = 1;
  TabularPredictor predictor("class", quiet);
  predictor.fit(train, options);
  const std::string summary = predictor.fit_summary();
  const std::string expected =
      fmt::format("dynamic stacking: stacking check on {} held-out rows", held_out);
  ASSERT_NE(summary.find(expected), std::string::npos) << summary;
  const bool kept = summary.find("stacking kept") != std::string::npos;
  EXPECT_NE(kept, summary.find("stacked overfitting") != std::string::npos) << summary;
  bool stacked_models = false;
  for (const LeaderboardRow& row : predictor.leaderboard()) {
    stacked_models = stacked_models || row.model.ends_with("_BAG_L2");
  }
  EXPECT_EQ(stacked_models, kept) << summary;

  // Off: no check, the stack as asked.
  options.dynamic_stacking = 0;
  TabularPredictor plain("class", quiet);
  plain.fit(train, options);
  EXPECT_EQ(plain.fit_summary().find("dynamic stacking"), std::string::npos);
}

TEST(DynamicStacking, NoConfigurationMayTakeAnEnsemblesName) {
  TFG_REQUIRE_DATASETS();
  const data::Table adult = data::ReadCsv(testing::DatasetPath("titanic.csv.gz"));
  FitOptions options;
  options.hyperparameters = R"({"GBM": {"ag_args": {"name": "WeightedEnsemble_L9"}}})";
  PredictorOptions quiet;
  quiet.verbosity = 0;
  try {
    TabularPredictor("survived", quiet).fit(adult, options);
    FAIL() << "a configuration named WeightedEnsemble_L9 was accepted";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("weighted ensembles"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace tabforge::automl

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "data/csv_reader.h"
#include "data/problem_type.h"
#include "data/table.h"
#include "ensemble/bagging.h"
#include "ensemble/folds.h"
#include "ensemble/weighted_ensemble.h"
#include "features/pipeline.h"
#include "key_memory_model.h"
#include "metrics/metric.h"
#include "models/model.h"
#include "test_support.h"

namespace tabforge::ensemble {
namespace {

TEST(Folds, EveryRowOnceStratifiedAndBalanced) {
  std::vector<double> labels;
  for (int row = 0; row < 1003; ++row) labels.push_back(row % 10 == 0 ? 1.0 : 0.0);  // 10% ones
  for (int set = 0; set < 2; ++set) {
    const std::vector<std::int32_t> folds = AssignFolds(labels, true, 5, 7, set);
    ASSERT_EQ(folds.size(), labels.size());
    std::map<int, int> sizes, ones;
    for (std::size_t row = 0; row < folds.size(); ++row) {
      ASSERT_GE(folds[row], 0);
      ASSERT_LT(folds[row], 5);
      ++sizes[folds[row]];
      ones[folds[row]] += labels[row] == 1.0;
    }
    for (int fold = 0; fold < 5; ++fold) {
      EXPECT_NEAR(sizes[fold], 1003 / 5.0, 1.0);
      EXPECT_NEAR(ones[fold], 101 / 5.0, 1.0);  // each fold holds its share of the minority
    }
  }
  // Another set draws other folds; the same set the same ones.
  EXPECT_NE(AssignFolds(labels, true, 5, 7, 0), AssignFolds(labels, true, 5, 7, 1));
  EXPECT_EQ(AssignFolds(labels, true, 5, 7, 1), AssignFolds(labels, true, 5, 7, 1));
}

TEST(Bagging, OutOfFoldPredictionsCoverEveryRowOncePerSetWithoutLeakage) {
  features::FeatureMatrix x;
  x.num_rows = 500;
  x.numeric_info.push_back({"key", "key", 0, {}});
  std::vector<double> labels;
  for (int row = 0; row < 500; ++row) {
    x.numeric.push_back(static_cast<float>(row) + 0.5f);
    labels.push_back(row % 3);
  }
  models::Task task;
  task.problem_type = ProblemType::kRegression;
  task.num_classes = 1;
  task.eval_metric = "root_mean_squared_error";
  std::vector<std::vector<std::int32_t>> sets = {AssignFolds(labels, false, 4, 1, 0),
                                                 AssignFolds(labels, false, 4, 1, 1),
                                                 AssignFolds(labels, false, 4, 1, 2)};
  const BagResult bag = FitBagged([] { return std::make_unique<testing::KeyMemoryModel>(); },
                                  "KEYS", x, labels, sets, 4, task, {});
  ASSERT_EQ(bag.out_of_fold.size(), 500u);
  for (double value : bag.out_of_fold) ASSERT_DOUBLE_EQ(value, 1.0);
  EXPECT_EQ(bag.group.members().size(), 12u);
  // The bag predicts training rows with models that saw them (each row: 9 of 12 members).
  const std::vector<double> in_sample = bag.group.Predict(x, 1);
  EXPECT_DOUBLE_EQ(in_sample[0], (9 * 1000.0 + 3 * 1.0) / 12);
}

// A bag's prediction of a few rows (its members side by side, one thread each) is the same bits
// as the one-by-one prediction and as those rows' part of a large batch: a bag of GBM and RF
// fold models on Adult.
TEST(Bagging, SmallBatchesPredictTheSameBitsAsLargeOnes) {
  TFG_REQUIRE_DATASETS();
  const data::Table table = data::ReadCsv(testing::DatasetPath("adult_train.csv.gz"));
  std::vector<std::int64_t> rows(3000);
  std::iota(rows.begin(), rows.end(), 0);
  const data::Table part = data::SelectRows(table, rows);
  const features::FeatureMatrix x = features::FeaturePipeline::Fit(part, "class").Transform(part);
  std::vector<double> labels;
  const data::Column& column = part.ColumnByName("class");
  for (std::int64_t row = 0; row < part.num_rows(); ++row)
    labels.push_back(column.CellText(row) == ">50K" ? 1.0 : 0.0);
  models::Task task;
  for (const char* family : {"GBM", "RF"}) {
    const std::string params =
        std::string(family) == "GBM" ? R"({"num_iterations": 30})" : R"({"n_estimators": 20})";
    const BagResult bag =
        FitBagged([&] { return models::GetFamily(family).create(params, task); }, family, x, labels,
                  {AssignFolds(labels, true, 4, 3, 0)}, 4, task, {}, 0, false);
    ASSERT_EQ(bag.group.members().size(), 4u) << family;
    const std::vector<double> large = bag.group.Predict(x, 2);
    for (const std::int64_t count : {std::int64_t(1), std::int64_t(37)}) {
      std::vector<std::int64_t> picked;
      for (std::int64_t at = 0; at < count; ++at) picked.push_back((at * 977 + 5) % x.num_rows);
      const features::FeatureMatrix few = features::SelectRows(x, picked);
      const std::vector<double> side_by_side = bag.group.Predict(few, 2);
      const std::vector<double> one_by_one = bag.group.Predict(few, 1);
      ASSERT_EQ(side_by_side.size(), static_cast<std::size_t>(2 * count));
      for (std::int64_t at = 0; at < count; ++at) {
        for (int k = 0; k < 2; ++k) {
          const double expected = large[picked[at] * 2 + k];
          ASSERT_EQ(side_by_side[at * 2 + k], expected) << family << ", row " << picked[at];
          ASSERT_EQ(one_by_one[at * 2 + k], expected) << family << ", row " << picked[at];
        }
      }
    }
  }
}

// Real members: GBM configurations trained on Adult rows, weighted on held-out rows.
TEST(WeightedEnsemble, WeightsSumToOneAndScoreAtLeastTheBestMember) {
  TFG_REQUIRE_DATASETS();
  const data::Table table = data::ReadCsv(testing::DatasetPath("adult_train.csv.gz"));
  std::vector<std::int64_t> fit_rows, valid_rows;
  for (std::int64_t row = 0; row < 6000; ++row)
    (row % 4 == 0 ? valid_rows : fit_rows).push_back(row);
  const data::Table fit_table = data::SelectRows(table, fit_rows);
  const data::Table valid_table = data::SelectRows(table, valid_rows);
  const data::LabelSummary summary = data::AnalyzeLabel(fit_table, "class");
  const features::FeaturePipeline pipeline = features::FeaturePipeline::Fit(fit_table, "class");
  const features::FeatureMatrix fit_x = pipeline.Transform(fit_table);
  const features::FeatureMatrix valid_x = pipeline.Transform(valid_table);
  auto labels_of = [&](const data::Table& t) {
    std::vector<double> out;
    const data::Column& column = t.ColumnByName("class");
    for (std::int64_t row = 0; row < t.num_rows(); ++row) {
      out.push_back(column.CellText(row) == summary.classes[1] ? 1.0 : 0.0);
    }
    return out;
  };
  const std::vector<double> fit_y = labels_of(fit_table), valid_y = labels_of(valid_table);
  models::Task task;
  const std::vector<std::string> configs = {
      R"({"num_iterations": 60})", R"({"num_iterations": 60, "extra_trees": true})",
      R"({"num_iterations": 40, "num_leaves": 8, "learning_rate": 0.2})"};
  std::vector<std::vector<double>> predictions;
  for (const std::string& config : configs) {
    auto model = models::GetFamily("GBM").create(config, task);
    model->Fit(fit_x, fit_y, nullptr, {}, {});
    predictions.push_back(model->Predict(valid_x, 0));
  }
  for (const char* metric : {"log_loss", "roc_auc", "accuracy"}) {
    std::vector<std::span<const double>> spans(predictions.begin(), predictions.end());
    const EnsembleWeights weights = SelectEnsemble(spans, 2, valid_y, metric);
    ASSERT_EQ(weights.weights.size(), 3u);
    EXPECT_NEAR(std::accumulate(weights.weights.begin(), weights.weights.end(), 0.0), 1.0, 1e-12);
    const metrics::MetricInfo& info = metrics::GetMetric(metric);
    for (const auto& member : predictions) {
      const double member_score = metrics::Score(metric, valid_y, {member, 2});
      EXPECT_FALSE(metrics::IsBetter(info, member_score, weights.score)) << metric;
    }
    // The reported score is that of the blended predictions.
    const std::vector<double> blended = BlendPredictions(spans, weights.weights);
    EXPECT_DOUBLE_EQ(metrics::Score(metric, valid_y, {blended, 2}), weights.score);
  }
}

// Accuracy ties between blends with the same argmax: the better calibrated blend is kept. Two
// members predict the same classes on every row (so every blend has the same accuracy), one
// confident (0.9) and one hedging (0.55). With plain ties the first member, the hedging one,
// would take every step. The log-loss tie-break starts from the confident one and keeps the
// prefix of lowest log loss: mostly the confident member, with a little hedging, which softens
// the one row both get wrong.
TEST(WeightedEnsemble, AccuracyTiesGoToTheLowerLogLoss) {
  const std::vector<double> labels = {1, 0, 1, 1, 0, 0, 1, 0};
  std::vector<double> hedging, confident;
  for (std::size_t row = 0; row < labels.size(); ++row) {
    // Row 7 is wrong for both (same argmax), the others right.
    const bool says_one = (labels[row] == 1) != (row == 7);
    hedging.push_back(says_one ? 0.45 : 0.55);
    hedging.push_back(says_one ? 0.55 : 0.45);
    confident.push_back(says_one ? 0.1 : 0.9);
    confident.push_back(says_one ? 0.9 : 0.1);
  }
  const std::vector<std::span<const double>> members = {hedging, confident};
  const EnsembleWeights weights = SelectEnsemble(members, 2, labels, "accuracy");
  EXPECT_DOUBLE_EQ(weights.score, 7.0 / 8.0);
  EXPECT_GT(weights.weights[1], 0.8);
  const std::vector<double> blended = BlendPredictions(members, weights.weights);
  EXPECT_LE(metrics::Score("log_loss", labels, {blended, 2}),
            metrics::Score("log_loss", labels, {confident, 2}));
  // log_loss is itself the metric: no tie-break applies, the lower loss wins outright.
  const EnsembleWeights by_loss = SelectEnsemble(members, 2, labels, "log_loss");
  EXPECT_GT(by_loss.weights[1], by_loss.weights[0]);
}

}  // namespace
}  // namespace tabforge::ensemble

// The batch grower's host loops grow the CPU grower's trees: the replay of its split order over
// nodes evaluated level by level, the split search from histograms, the partitions.
#include "models/forest/forest_batch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "data/csv_reader.h"
#include "features/pipeline.h"
#include "models/adult_features.h"
#include "models/forest/forest_parity.h"
#include "test_support.h"

namespace tabforge::forest {
namespace {

using parity::Bind;
using parity::ExpectSameTrees;
using parity::MakeParityData;
using parity::MakeSynthetic;

TreeSpec Spec(Criterion criterion, int features_per_node, int max_leaf_nodes, bool extra) {
  TreeSpec spec;
  spec.criterion = criterion;
  spec.features_per_node = features_per_node;
  spec.max_leaf_nodes = max_leaf_nodes;
  spec.extra_trees = extra;
  return spec;
}

TEST(ForestBatch, SyntheticTreesMatchTheCpuGrower) {
  const parity::Synthetic data = MakeSynthetic(3000, false, 21);
  struct Case {
    TreeSpec spec;
    bool bootstrap;
    const char* what;
  };
  std::vector<Case> cases;
  cases.push_back({Spec(Criterion::kGini, 2, 0, false), true, "RF gini depth-first"});
  cases.push_back({Spec(Criterion::kEntropy, 2, 40, false), true, "RF entropy best-first 40"});
  cases.push_back({Spec(Criterion::kGini, 3, 0, true), false, "XT gini depth-first"});
  cases.push_back({Spec(Criterion::kEntropy, 1, 25, true), true, "XT entropy best-first 25"});
  TreeSpec limited = Spec(Criterion::kGini, 7, 0, false);
  limited.max_depth = 6;
  limited.min_samples_leaf = 4;
  limited.min_samples_split = 12;
  limited.min_impurity_decrease = 2e-4;
  cases.push_back({limited, true, "RF limits"});
  for (const Case& test_case : cases) {
    parity::ParityData parity_data =
        MakeParityData(data.features, data.labels, 3, test_case.spec, test_case.bootstrap, 5);
    const BatchData& batch = Bind(parity_data);
    const auto device = MakeHostBatchDevice(batch, 3);
    ExpectSameTrees(*device, parity_data, 5, test_case.what);
  }
  // Regression: squared error on the same rows' continuous target (RF best-first and XT).
  const parity::Synthetic regression = MakeSynthetic(3000, true, 24);
  for (bool extra : {false, true}) {
    TreeSpec spec = Spec(Criterion::kSquaredError, extra ? 7 : 4, extra ? 0 : 50, extra);
    parity::ParityData parity_data =
        MakeParityData(regression.features, regression.labels, 1, spec, !extra, 6);
    const BatchData& batch = Bind(parity_data);
    auto device = MakeHostBatchDevice(batch, 3);
    ASSERT_NE(device, nullptr);
    ExpectSameTrees(*device, parity_data, 5, extra ? "XT regression" : "RF regression");
  }
  // Wide bins (16-bit cells) and 12 classes.
  const parity::Synthetic wide = MakeSynthetic(3000, true, 22);
  std::vector<double> classes;
  for (double value : wide.labels) {
    classes.push_back(std::clamp(std::floor((value + 2.5) * 2), 0.0, 11.0));
  }
  parity::ParityData parity_data = MakeParityData(
      wide.features, classes, 12, Spec(Criterion::kEntropy, 3, 0, false), true, 8, 1000);
  const BatchData& batch = Bind(parity_data);
  ASSERT_TRUE(parity_data.bins.wide());
  const auto device = MakeHostBatchDevice(batch, 2);
  ExpectSameTrees(*device, parity_data, 3, "RF entropy, 1000 bins, 12 classes");
}

TEST(ForestBatch, AdultTreesMatchTheCpuGrower) {
  TFG_REQUIRE_DATASETS();
  const tabforge::testing::AdultFeatures adult = tabforge::testing::LoadAdultFeatures();
  const int features =
      static_cast<int>(adult.train.numeric_info.size() + adult.train.categorical_info.size());
  const int per_node = static_cast<int>(std::sqrt(double(features)));
  for (bool extra : {false, true}) {
    parity::ParityData data = MakeParityData(
        adult.train, adult.train_labels, 2,
        Spec(extra ? Criterion::kEntropy : Criterion::kGini, per_node, 15000, extra), true, 3);
    const BatchData& batch = Bind(data);
    const auto device = MakeHostBatchDevice(batch, 2);
    ExpectSameTrees(*device, data, 2, extra ? "Adult XT" : "Adult RF");
  }
}

TEST(ForestBatch, AnExpiredDeadlineDropsTheBatch) {
  const parity::Synthetic data = MakeSynthetic(1000, false, 23);
  parity::ParityData parity_data =
      MakeParityData(data.features, data.labels, 3, Spec(Criterion::kGini, 2, 0, false), true, 4);
  const BatchData& batch = Bind(parity_data);
  const auto device = MakeHostBatchDevice(batch, 2);
  std::vector<tree::Tree> trees;
  std::vector<std::vector<double>> outputs;
  const Deadline expired = Deadline::In(0);
  EXPECT_FALSE(GrowTreeBatch(*device, batch, 0, 2, trees, outputs, &expired));
  EXPECT_TRUE(trees.empty());
  EXPECT_TRUE(outputs.empty());
  const Deadline later = Deadline::In(600);
  EXPECT_TRUE(GrowTreeBatch(*device, batch, 0, 2, trees, outputs, &later));
  EXPECT_EQ(trees.size(), 2u);
  EXPECT_GT(trees[0].num_leaves(), 2);
}

}  // namespace
}  // namespace tabforge::forest

// Trees grown by ForestTreeGrower (the CPU) and by the batch grower on a device, for the
// parity tests of the host loops (forest_batch_test) and of the CUDA kernels
// (forest_cuda_test).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/serialize.h"
#include "features/feature_matrix.h"
#include "models/adult_features.h"
#include "models/forest/forest_batch.h"
#include "models/forest/forest_grower.h"
#include "models/letter_features.h"

namespace tabforge::forest::parity {

// A small problem: 6 numeric features (one with missing values), one categorical, and a label
// that depends on several of them (classes: 3, or a regression target).
struct Synthetic {
  features::FeatureMatrix features;
  std::vector<double> labels;
};

Synthetic MakeSynthetic(std::int64_t rows, bool regression, std::uint64_t seed) {
  Synthetic data;
  features::FeatureMatrix& x = data.features;
  x.num_rows = rows;
  const int numeric = 6;
  x.numeric.resize(static_cast<std::size_t>(rows) * numeric);
  for (int f = 0; f < numeric; ++f) x.numeric_info.push_back({"x" + std::to_string(f), "", 0, {}});
  x.categorical.resize(static_cast<std::size_t>(rows));
  x.categorical_info.push_back({"c", "c", 5, {}});
  for (std::int64_t row = 0; row < rows; ++row) {
    for (int f = 0; f < numeric; ++f) {
      x.numeric[f * rows + row] = static_cast<float>(RandomUniform(seed, f, row) * 4 - 2);
    }
    if (RandomUniform(seed, 99, row) < 0.1) x.numeric[5 * rows + row] = std::nanf("");
    x.categorical[row] = static_cast<std::int32_t>(RandomUniform(seed, 77, row) * 5);
    const double signal =
        x.numeric[row] * x.numeric[rows + row] + std::sin(x.numeric[2 * rows + row]) +
        (x.categorical[row] == 3 ? 1.5 : 0.0) + 0.5 * RandomUniform(seed, 55, row);
    data.labels.push_back(regression ? signal : (signal < -0.3 ? 0.0 : signal < 0.8 ? 1.0 : 2.0));
  }
  return data;
}

// Binned rows and classes a batch reads (owning what BatchData borrows).
struct ParityData {
  tree::BinMapper mapper;
  tree::BinMatrix bins;
  std::vector<std::int32_t> classes;  // classification
  std::vector<double> targets;        // regression: centred and quantized (QuantizeTargets)
  std::vector<long long> units;
  std::vector<std::vector<double>> bin_lows;
  BatchData batch;
};

inline ParityData MakeParityData(const features::FeatureMatrix& features,
                                 const std::vector<double>& labels, int num_classes,
                                 const TreeSpec& spec, bool bootstrap, std::uint64_t seed,
                                 int max_bin = 255) {
  ParityData data;
  tree::BinningOptions binning;
  binning.max_bin = max_bin;
  binning.categories_sorted = true;
  data.mapper = tree::BinMapper::Fit(features, binning, 0);
  data.bins = tree::ApplyBins(data.mapper, features, 0);
  data.bin_lows = BinLowestValues(features, data.bins, data.mapper, 0);
  data.batch.spec = spec;
  data.batch.spec.num_classes = num_classes;
  data.batch.seed = seed;
  data.batch.draws = bootstrap ? features.num_rows : 0;
  if (spec.criterion == Criterion::kSquaredError) {
    double mean = 0;
    for (double label : labels) mean += label;
    mean /= double(labels.size());
    for (double label : labels) data.targets.push_back(label - mean);
    data.batch.value_unit = QuantizeTargets(data.targets, features.num_rows, &data.units);
  } else {
    for (double label : labels) data.classes.push_back(static_cast<std::int32_t>(label));
  }
  return data;
}

// Points the batch at the data's members (after the data has settled in memory).
inline const BatchData& Bind(ParityData& data) {
  data.batch.bins = &data.bins;
  data.batch.mapper = &data.mapper;
  data.batch.bin_lows = &data.bin_lows;
  data.batch.classes = data.classes.empty() ? nullptr : data.classes.data();
  data.batch.target_units = data.units.empty() ? nullptr : data.units.data();
  return data.batch;
}

// Trees [0, count) grown by ForestTreeGrower on the batch's bootstraps.
inline void CpuTrees(const BatchData& batch, const std::vector<double>& targets, int count,
                     std::vector<tree::Tree>& trees, std::vector<std::vector<double>>& outputs) {
  const ColumnBins columns = ColumnBins::Of(*batch.bins, 2);
  TrainingRows rows;
  rows.bins = &columns;
  rows.mapper = batch.mapper;
  rows.bin_lows = batch.bin_lows;
  rows.classes = batch.classes;
  rows.targets = targets.empty() ? nullptr : targets.data();
  rows.target_units = batch.target_units;
  rows.value_unit = batch.value_unit;
  ForestTreeGrower grower(rows, batch.spec);
  const std::int64_t num_rows = batch.bins->num_rows;
  for (int tree_index = 0; tree_index < count; ++tree_index) {
    std::vector<std::uint32_t> weights(static_cast<std::size_t>(num_rows), batch.draws > 0 ? 0 : 1);
    const std::uint64_t stream = kernels::kBootstrapStream ^ Mix64(std::uint64_t(tree_index));
    for (std::int64_t draw = 0; draw < batch.draws; ++draw) {
      ++weights[RandomBelow(batch.seed, stream, std::uint64_t(draw), std::uint64_t(num_rows))];
    }
    std::vector<std::int32_t> rows_of_tree;
    for (std::int64_t row = 0; row < num_rows; ++row) {
      if (weights[row] > 0) rows_of_tree.push_back(static_cast<std::int32_t>(row));
    }
    outputs.emplace_back();
    trees.push_back(grower.Grow(rows_of_tree, weights.data(), batch.seed, std::uint64_t(tree_index),
                                outputs.back()));
  }
}

inline std::string TreeBytes(const tree::Tree& tree) {
  ByteWriter writer;
  tree.Write(writer);
  return writer.bytes();
}

// Grows `count` trees on `device` in batches of its slots and expects every tree and leaf
// output to equal the CPU grower's.
inline void ExpectSameTrees(BatchDevice& device, const ParityData& data, int count,
                            const std::string& what) {
  const BatchData& batch = data.batch;
  std::vector<tree::Tree> cpu_trees, batch_trees;
  std::vector<std::vector<double>> cpu_outputs, batch_outputs;
  CpuTrees(batch, data.targets, count, cpu_trees, cpu_outputs);
  for (int first = 0; first < count; first += device.slots()) {
    GrowTreeBatch(device, batch, std::uint64_t(first), std::min(device.slots(), count - first),
                  batch_trees, batch_outputs);
  }
  ASSERT_EQ(batch_trees.size(), cpu_trees.size()) << what;
  int leaves = 0;
  for (int tree_index = 0; tree_index < count; ++tree_index) {
    EXPECT_EQ(TreeBytes(batch_trees[tree_index]), TreeBytes(cpu_trees[tree_index]))
        << what << ": tree " << tree_index << " (" << batch_trees[tree_index].num_leaves()
        << " leaves, the CPU's " << cpu_trees[tree_index].num_leaves() << ")";
    EXPECT_EQ(batch_outputs[tree_index], cpu_outputs[tree_index])
        << what << ": tree " << tree_index;
    leaves += cpu_trees[tree_index].num_leaves();
  }
  EXPECT_GT(leaves, 2 * count) << what << ": the trees should split";
}

inline TreeSpec Spec(Criterion criterion, int features_per_node, int max_leaf_nodes, bool extra) {
  TreeSpec spec;
  spec.criterion = criterion;
  spec.features_per_node = features_per_node;
  spec.max_leaf_nodes = max_leaf_nodes;
  spec.extra_trees = extra;
  return spec;
}

// A device for a batch (host loops or CUDA); null fails the test.
using DeviceMaker = std::function<std::unique_ptr<BatchDevice>(const BatchData&)>;

// Grows `trees` trees per case on devices from `make` and expects the CPU grower's: synthetic
// data of `rows` rows, 3 classes (RF and XT, Gini and entropy, depth-first and best-first,
// size and impurity limits), regression (RF best-first, XT), and 12 classes on 1000-bin
// (16-bit) features.
inline void ExpectSyntheticParity(const DeviceMaker& make, std::int64_t rows, int trees) {
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
  auto grow = [&](ParityData& data, const char* what) {
    const std::unique_ptr<BatchDevice> device = make(Bind(data));
    ASSERT_NE(device, nullptr) << what;
    ExpectSameTrees(*device, data, trees, what);
  };
  const Synthetic classification = MakeSynthetic(rows, false, 21);
  for (const Case& test_case : cases) {
    ParityData data = MakeParityData(classification.features, classification.labels, 3,
                                     test_case.spec, test_case.bootstrap, 5);
    grow(data, test_case.what);
  }
  const Synthetic regression = MakeSynthetic(rows, true, 24);
  for (bool extra : {false, true}) {
    const TreeSpec spec = Spec(Criterion::kSquaredError, extra ? 7 : 4, extra ? 0 : 50, extra);
    ParityData data = MakeParityData(regression.features, regression.labels, 1, spec, !extra, 6);
    grow(data, extra ? "XT regression" : "RF regression");
  }
  const Synthetic wide = MakeSynthetic(rows, true, 22);
  std::vector<double> classes;
  for (double value : wide.labels) {
    classes.push_back(std::clamp(std::floor((value + 2.5) * 2), 0.0, 11.0));
  }
  ParityData data = MakeParityData(wide.features, classes, 12,
                                   Spec(Criterion::kEntropy, 3, 0, false), true, 8, 1000);
  ASSERT_TRUE(data.bins.wide());
  grow(data, "RF entropy, 1000 bins, 12 classes");
}

// The same on Adult (RF gini and XT entropy, 3 features a node, best-first 15000 leaves) and,
// with `letter`, on letter (RF, 26 classes). Call after TFG_REQUIRE_DATASETS().
inline void ExpectDatasetParity(const DeviceMaker& make, int trees, bool letter) {
  auto grow = [&](ParityData& data, const char* what) {
    const std::unique_ptr<BatchDevice> device = make(Bind(data));
    ASSERT_NE(device, nullptr) << what;
    ExpectSameTrees(*device, data, trees, what);
  };
  const tabforge::testing::AdultFeatures adult = tabforge::testing::LoadAdultFeatures();
  for (bool extra : {false, true}) {
    ParityData data = MakeParityData(
        adult.train, adult.train_labels, 2,
        Spec(extra ? Criterion::kEntropy : Criterion::kGini, 3, 15000, extra), true, 3);
    grow(data, extra ? "Adult XT" : "Adult RF");
  }
  if (!letter) return;
  const tabforge::testing::LetterFeatures rows = tabforge::testing::LoadLetterFeatures();
  ParityData data = MakeParityData(rows.rows, rows.labels, rows.classes,
                                   Spec(Criterion::kGini, 4, 0, false), true, 9);
  grow(data, "letter RF");
}

}  // namespace tabforge::forest::parity

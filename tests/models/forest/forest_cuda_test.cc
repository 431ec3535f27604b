// CPU/GPU parity of the forests: the CUDA batch device grows the CPU grower's trees (kernels:
// bootstrap, histograms and split search, partitions), and a forest fitted with device cuda
// is byte-for-byte the CPU's model. Skips where no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "data/csv_reader.h"
#include "data/problem_type.h"
#include "device/cuda_device.h"
#include "features/pipeline.h"
#include "gpu_support.h"
#include "models/adult_features.h"
#include "models/forest/forest.h"
#include "models/forest/forest_batch.h"
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

// The CUDA device with at most `slots` trees a batch (fewer than the trees grown, so slots are
// reused across batches).
std::unique_ptr<BatchDevice> Cuda(const BatchData& batch, int slots = 4) {
  std::string why, name;
  auto device = MakeCudaBatchDevice(batch, 0, 0.9, why, name, slots);
  EXPECT_NE(device, nullptr) << why;
  return device;
}

TEST(ForestCuda, SyntheticTreesMatchTheCpuGrower) {
  TFG_REQUIRE_GPU();
  const parity::Synthetic data = MakeSynthetic(5000, false, 31);
  struct Case {
    TreeSpec spec;
    bool bootstrap;
    const char* what;
  };
  std::vector<Case> cases;
  cases.push_back({Spec(Criterion::kGini, 2, 0, false), true, "RF gini depth-first"});
  cases.push_back({Spec(Criterion::kEntropy, 2, 60, false), true, "RF entropy best-first 60"});
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
    auto device = Cuda(batch);
    ASSERT_NE(device, nullptr);
    ExpectSameTrees(*device, parity_data, 6, test_case.what);
  }
  // Regression: squared error on the same rows' continuous target (RF best-first and XT).
  const parity::Synthetic regression = MakeSynthetic(5000, true, 24);
  for (bool extra : {false, true}) {
    TreeSpec spec = Spec(Criterion::kSquaredError, extra ? 7 : 4, extra ? 0 : 50, extra);
    parity::ParityData parity_data =
        MakeParityData(regression.features, regression.labels, 1, spec, !extra, 6);
    const BatchData& batch = Bind(parity_data);
    auto device = Cuda(batch);
    ASSERT_NE(device, nullptr);
    ExpectSameTrees(*device, parity_data, 6, extra ? "XT regression" : "RF regression");
  }
  // Wide bins (16-bit cells) and 12 classes: a histogram over 48 KiB of shared memory.
  const parity::Synthetic wide = MakeSynthetic(6000, true, 32);
  std::vector<double> classes;
  for (double value : wide.labels) {
    classes.push_back(std::clamp(std::floor((value + 2.5) * 2), 0.0, 11.0));
  }
  parity::ParityData parity_data = MakeParityData(
      wide.features, classes, 12, Spec(Criterion::kEntropy, 3, 0, false), true, 8, 1000);
  const BatchData& batch = Bind(parity_data);
  ASSERT_TRUE(parity_data.bins.wide());
  auto device = Cuda(batch);
  ASSERT_NE(device, nullptr);
  ExpectSameTrees(*device, parity_data, 5, "RF entropy, 1000 bins, 12 classes");
}

TEST(ForestCuda, AdultAndLetterTreesMatchTheCpuGrower) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  const tabforge::testing::AdultFeatures adult = tabforge::testing::LoadAdultFeatures();
  for (bool extra : {false, true}) {
    parity::ParityData data = MakeParityData(
        adult.train, adult.train_labels, 2,
        Spec(extra ? Criterion::kEntropy : Criterion::kGini, 3, 15000, extra), true, 3);
    const BatchData& batch = Bind(data);
    auto device = Cuda(batch);
    ASSERT_NE(device, nullptr);
    ExpectSameTrees(*device, data, 4, extra ? "Adult XT" : "Adult RF");
  }
  data::Table letter = data::ReadCsv(tabforge::testing::DatasetPath("letter.csv.gz"));
  const data::LabelSummary summary = data::AnalyzeLabel(letter, "lettr");
  const features::FeatureMatrix rows =
      features::FeaturePipeline::Fit(letter, "lettr").Transform(letter);
  std::vector<double> labels;
  const data::Column& column = letter.ColumnByName("lettr");
  for (std::int64_t row = 0; row < letter.num_rows(); ++row) {
    labels.push_back(
        double(std::find(summary.classes.begin(), summary.classes.end(), column.CellText(row)) -
               summary.classes.begin()));
  }
  parity::ParityData data = MakeParityData(rows, labels, int(summary.classes.size()),
                                           Spec(Criterion::kGini, 4, 0, false), true, 9);
  const BatchData& batch = Bind(data);
  auto device = Cuda(batch);
  ASSERT_NE(device, nullptr);
  ExpectSameTrees(*device, data, 3, "letter RF");
}

TEST(ForestCuda, FittedModelIsTheCpuModel) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  const tabforge::testing::AdultFeatures adult = tabforge::testing::LoadAdultFeatures();
  for (bool extra : {false, true}) {
    ForestParams params;
    params.n_estimators = 12;
    params.extra_trees = extra;
    std::vector<double> cpu_oob, gpu_oob;
    const ForestModel cpu =
        ForestModel::Fit(adult.train, adult.train_labels, 2, params, 0, Deadline(), &cpu_oob);
    params.device = "cuda";
    const ForestModel gpu =
        ForestModel::Fit(adult.train, adult.train_labels, 2, params, 0, Deadline(), &gpu_oob);
    EXPECT_NE(gpu.report().device, "cpu") << gpu.report().device_note;
    EXPECT_EQ(gpu.Serialize(), cpu.Serialize()) << (extra ? "XT" : "RF");
    EXPECT_EQ(gpu_oob, cpu_oob);
    EXPECT_EQ(gpu.Predict(adult.test, 0), cpu.Predict(adult.test, 0));
  }
  // Regression (quantized targets): the same model too.
  const parity::Synthetic train = MakeSynthetic(6000, true, 33);
  ForestParams params;
  params.n_estimators = 10;
  params.criterion = Criterion::kSquaredError;
  const ForestModel cpu = ForestModel::Fit(train.features, train.labels, 1, params, 0);
  params.device = "cuda";
  const ForestModel gpu = ForestModel::Fit(train.features, train.labels, 1, params, 0);
  EXPECT_NE(gpu.report().device, "cpu") << gpu.report().device_note;
  EXPECT_EQ(gpu.Serialize(), cpu.Serialize()) << "RF regression";
}

}  // namespace
}  // namespace tabforge::forest

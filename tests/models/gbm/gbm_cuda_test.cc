// The CUDA backend against the CPU's: the same data, parameters and seed must give the same
// model bytes (and so the same predictions). Labelled "gpu"; each test skips with the reason
// where no usable CUDA device is present.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>

#include "core/random.h"
#include "data/csv_reader.h"
#include "data/problem_type.h"
#include "data/table.h"
#include "device/cuda_device.h"
#include "features/pipeline.h"
#include "gpu_support.h"
#include "models/adult_features.h"
#include "models/gbm/gbm.h"
#include "test_support.h"

namespace tabforge::gbm {
namespace {

struct Problem {
  features::FeatureMatrix features;
  std::vector<double> labels;
};

// Trains on the CPU and on the GPU and expects identical model bytes.
void ExpectSameModel(const Problem& problem, GbmParams params, const std::string& what) {
  params.device = "cpu";
  const GbmModel cpu = GbmModel::Fit(problem.features, problem.labels, {}, nullptr, {}, params, 0);
  params.device = "cuda";
  const GbmModel gpu = GbmModel::Fit(problem.features, problem.labels, {}, nullptr, {}, params, 0);
  ASSERT_EQ(gpu.report().device_note, "") << what;
  EXPECT_EQ(gpu.report().device.rfind("cuda:", 0), 0u) << what << ": " << gpu.report().device;
  ASSERT_EQ(cpu.trees().size(), gpu.trees().size()) << what;
  // The first differing tree says more than the hash.
  for (std::size_t at = 0; at < cpu.trees().size(); ++at) {
    const tree::Tree& a = cpu.trees()[at];
    const tree::Tree& b = gpu.trees()[at];
    ASSERT_EQ(a.num_leaves(), b.num_leaves()) << what << ", tree " << at;
    for (std::size_t node = 0; node < a.nodes().size(); ++node) {
      ASSERT_EQ(a.nodes()[node].feature, b.nodes()[node].feature)
          << what << ", tree " << at << " node " << node;
      ASSERT_EQ(a.nodes()[node].threshold_bin, b.nodes()[node].threshold_bin)
          << what << ", tree " << at << " node " << node;
      ASSERT_EQ(a.nodes()[node].gain, b.nodes()[node].gain)
          << what << ", tree " << at << " node " << node;
    }
    ASSERT_EQ(a.leaf_values(), b.leaf_values()) << what << ", tree " << at;
  }
  EXPECT_EQ(cpu.Serialize(), gpu.Serialize()) << what;
  EXPECT_EQ(cpu.Predict(problem.features), gpu.Predict(problem.features)) << what;
}

Problem LoadAdult() {
  testing::AdultFeatures adult = testing::LoadAdultFeatures();
  Problem problem;
  problem.features = std::move(adult.train);
  problem.labels = std::move(adult.train_labels);
  return problem;
}

// HIGGS-like rows: dense normal features, a nonlinear score; `classes` = 2 gives a binary
// label, more a multiclass one by score quantiles.
Problem MakeSynthetic(std::int64_t rows, int features, int classes) {
  Problem problem;
  problem.features.num_rows = rows;
  problem.features.numeric.resize(static_cast<std::size_t>(rows) * features);
  for (int f = 0; f < features; ++f) {
    problem.features.numeric_info.push_back({"x" + std::to_string(f), "x", 0, {}});
  }
  std::mt19937_64 random(7);
  std::normal_distribution<float> normal;
  for (std::size_t at = 0; at < problem.features.numeric.size(); ++at) {
    problem.features.numeric[at] = normal(random);
  }
  auto x = [&](int f, std::int64_t row) { return problem.features.numeric[f * rows + row]; };
  for (std::int64_t row = 0; row < rows; ++row) {
    const double score = x(0, row) * x(1, row) + std::sin(x(2, row)) + 0.5 * x(3, row) -
                         0.3 * x(4, row) * x(4, row) + 0.7 * normal(random);
    problem.labels.push_back(classes == 2   ? (score > 0 ? 1.0 : 0.0)
                             : score < -0.8 ? 0.0
                             : score < 0.6  ? 1.0
                                            : 2.0);
  }
  return problem;
}

TEST(GbmCuda, AdultDefaultsMatchTheCpu) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  const Problem adult = LoadAdult();
  ExpectSameModel(adult, GbmParams{}, "Adult, LightGBM's defaults");
}

TEST(GbmCuda, AdultSamplingOptionsMatchTheCpu) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  const Problem adult = LoadAdult();
  GbmParams params;
  params.num_iterations = 30;
  params.num_leaves = 63;
  params.bagging_fraction = 0.7;
  params.bagging_freq = 1;
  params.feature_fraction = 0.8;
  params.feature_fraction_bynode = 0.7;
  params.lambda_l1 = 0.5;
  params.lambda_l2 = 1;
  params.max_cat_to_onehot = 8;
  ExpectSameModel(adult, params, "Adult, bagging and feature sampling");
  params.extra_trees = true;
  params.max_depth = 6;
  ExpectSameModel(adult, params, "Adult, extra trees");
}

TEST(GbmCuda, MillionRowsBinaryAndMulticlassMatchTheCpu) {
  TFG_REQUIRE_GPU();
  GbmParams params;
  params.num_iterations = 20;
  params.num_leaves = 255;
  ExpectSameModel(MakeSynthetic(1000000, 28, 2), params, "1M x 28 binary");
  params.objective = "multiclass";
  params.num_class = 3;
  params.num_iterations = 8;
  ExpectSameModel(MakeSynthetic(1000000, 28, 3), params, "1M x 28 multiclass");
}

// 30 features: the device rows are padded to 32 cells. At 1023 bins the cells are 16-bit and
// the features split into several shared-memory groups, some starting off a multiple of 4 (the
// histogram threads then read cell by cell instead of a word of four).
TEST(GbmCuda, PaddedRowsAndSeveralFeatureGroupsMatchTheCpu) {
  TFG_REQUIRE_GPU();
  const Problem synthetic = MakeSynthetic(200000, 30, 2);
  GbmParams params;
  params.num_iterations = 15;
  params.num_leaves = 127;
  ExpectSameModel(synthetic, params, "200k x 30, 255 bins");
  params.max_bin = 1023;
  ExpectSameModel(synthetic, params, "200k x 30, 1023 bins");
}

TEST(GbmCuda, RegressionObjectivesMatchTheCpu) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  data::Table table = data::ReadCsv(testing::DatasetPath("california_housing.csv.gz"));
  Problem problem;
  problem.features = features::FeaturePipeline::Fit(table, "median_house_value").Transform(table);
  const data::Column& column = table.ColumnByName("median_house_value");
  for (std::int64_t row = 0; row < table.num_rows(); ++row) {
    problem.labels.push_back(std::stod(column.CellText(row)));
  }
  GbmParams params;
  params.objective = "regression";
  params.num_iterations = 40;
  ExpectSameModel(problem, params, "california_housing, L2");
  params.objective = "huber";
  params.alpha = 20000;
  ExpectSameModel(problem, params, "california_housing, Huber");
}

// GPU prediction against the CPU's: the same doubles for every row, with missing values and
// unknown categorical codes among them.
void ExpectSamePredictions(const GbmModel& model, features::FeatureMatrix rows,
                           const std::string& what) {
  for (std::int64_t row = 0; row < rows.num_rows; row += 7) {
    if (rows.num_numeric() > 0)
      rows.numeric[(row % rows.num_numeric()) * rows.num_rows + row] = NAN;
    if (rows.num_categorical() > 0) {
      const std::int64_t at = (row % rows.num_categorical()) * rows.num_rows + row;
      rows.categorical[at] = row % 2 == 0 ? -1 : 100000;  // missing, never seen
    }
  }
  std::vector<double> device_raw;
  std::string why;
  ASSERT_TRUE(model.PredictRawOnDevice(rows, device_raw, why)) << what << ": " << why;
  const std::vector<double> cpu_raw = model.PredictRaw(rows, 0);
  ASSERT_EQ(device_raw.size(), cpu_raw.size()) << what;
  for (std::size_t at = 0; at < cpu_raw.size(); ++at) {
    ASSERT_EQ(device_raw[at], cpu_raw[at]) << what << ", cell " << at;
  }
}

TEST(GbmCuda, PredictionsMatchTheCpu) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  const Problem adult = LoadAdult();
  GbmParams params;
  params.num_iterations = 60;
  params.max_cat_to_onehot = 8;  // categorical bitsets of several categories
  const GbmModel binary = GbmModel::Fit(adult.features, adult.labels, {}, nullptr, {}, params, 0);
  ExpectSamePredictions(binary, adult.features, "Adult");
  const Problem synthetic = MakeSynthetic(50000, 12, 3);
  params.objective = "multiclass";
  params.num_class = 3;
  params.num_iterations = 20;
  const GbmModel multiclass =
      GbmModel::Fit(synthetic.features, synthetic.labels, {}, nullptr, {}, params, 0);
  ExpectSamePredictions(multiclass, synthetic.features, "synthetic multiclass");
}

TEST(GbmCuda, MissingDeviceOrdinalFallsBackWithTheReason) {
  TFG_REQUIRE_GPU();
  const Problem problem = MakeSynthetic(5000, 6, 2);
  GbmParams params;
  params.num_iterations = 5;
  params.device = "cuda";
  params.gpu_device_id = 64;
  const GbmModel model =
      GbmModel::Fit(problem.features, problem.labels, {}, nullptr, {}, params, 0);
  EXPECT_EQ(model.report().device, "cpu");
  EXPECT_NE(model.report().device_note.find("device 64 does not exist"), std::string::npos)
      << model.report().device_note;
}

}  // namespace
}  // namespace tabforge::gbm

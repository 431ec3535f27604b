// CPU/GPU parity of the LR family: the same objective minimised with the products over the rows
// on the GPU gives predictions within 1e-5 of the CPU's. Skips where no CUDA device is usable.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/random.h"
#include "gpu_support.h"
#include "models/adult_features.h"
#include "models/linear/linear.h"
#include "models/linear/linear_device.h"
#include "models/uniform_features.h"
#include "test_support.h"

namespace tabforge::linear {
namespace {

// Fits `params` on the CPU and with "device": "cuda"; returns the largest prediction gap.
double LargestGap(const std::string& params, const models::Task& task,
                  const features::FeatureMatrix& train, const std::vector<double>& labels,
                  const features::FeatureMatrix& test) {
  auto cpu = CreateLinearModel(params, task);
  cpu->Fit(train, labels, nullptr, {}, models::FitContext());
  std::string gpu_params = params;
  gpu_params.insert(gpu_params.rfind('}'),
                    params == "{}" ? R"("device": "cuda")" : R"(, "device": "cuda")");
  auto gpu = CreateLinearModel(gpu_params, task);
  gpu->Fit(train, labels, nullptr, {}, models::FitContext());
  EXPECT_EQ(gpu->Info().device.rfind("cuda:", 0), 0u) << gpu->Info().device_note;
  EXPECT_EQ(cpu->Info().device, "cpu");
  const std::vector<double> a = cpu->Predict(test, 2), b = gpu->Predict(test, 2);
  EXPECT_EQ(a.size(), b.size());
  double gap = 0;
  for (std::size_t at = 0; at < a.size(); ++at) gap = std::max(gap, std::fabs(a[at] - b[at]));
  ::testing::Test::RecordProperty(fmt::format("{} classes, {}", task.num_classes, params),
                                  fmt::format("{:.3g}", gap));
  return gap;
}

TEST(LinearCuda, SyntheticPredictionsMatchTheCpu) {
  TFG_REQUIRE_GPU();
  const std::int64_t rows = 40000;
  const features::FeatureMatrix x = testing::UniformFeatures(rows, 10, 11, true);
  const features::FeatureMatrix test = testing::UniformFeatures(5000, 10, 12, true);
  std::vector<double> binary, three, target;
  for (std::int64_t row = 0; row < rows; ++row) {
    const double score = x.NumericColumn(0)[row] - 0.4 * x.NumericColumn(3)[row] +
                         0.2 * x.NumericColumn(7)[row] + (RandomUniform(13, 0, row) - 0.5);
    binary.push_back(score > 0 ? 1.0 : 0.0);
    three.push_back(score < -0.5 ? 0.0 : score < 0.5 ? 1.0 : 2.0);
    target.push_back(3 * score + 0.1 * x.NumericColumn(9)[row]);
  }
  models::Task multiclass;
  multiclass.problem_type = ProblemType::kMulticlass;
  multiclass.num_classes = 3;
  models::Task regression;
  regression.problem_type = ProblemType::kRegression;
  regression.num_classes = 1;
  EXPECT_LE(LargestGap("{}", models::Task(), x, binary, test), 1e-5);
  EXPECT_LE(LargestGap(R"({"penalty": "l1", "C": 0.05})", models::Task(), x, binary, test), 1e-5);
  EXPECT_LE(LargestGap("{}", multiclass, x, three, test), 1e-5);
  EXPECT_LE(LargestGap(R"({"penalty": "elasticnet", "C": 0.2})", multiclass, x, three, test), 1e-5);
  EXPECT_LE(LargestGap("{}", regression, x, target, test), 1e-5);
  EXPECT_LE(LargestGap(R"({"penalty": "l1", "alpha": 0.01})", regression, x, target, test), 1e-5);
}

TEST(LinearCuda, AdultPredictionsMatchTheCpu) {
  TFG_REQUIRE_GPU();
  TFG_REQUIRE_DATASETS();
  const testing::AdultFeatures adult = testing::LoadAdultFeatures();
  for (const char* params : {"{}", R"({"transform": "quantile"})", R"({"penalty": "l1"})"}) {
    EXPECT_LE(LargestGap(params, models::Task(), adult.train, adult.train_labels, adult.test), 1e-5)
        << params;
  }
}

TEST(LinearCuda, MissingDeviceOrdinalGivesTheReason) {
  TFG_REQUIRE_GPU();
  const std::vector<double> design(8, 1.0), labels(4, 0.0);
  std::string why;
  EXPECT_EQ(UploadDesign(design, 4, 2, labels.data(), LossKind::kLogistic, 1, 97, 0.9, why),
            nullptr);
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace tabforge::linear

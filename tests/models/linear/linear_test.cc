#include "models/linear/linear.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/random.h"
#include "data/csv_reader.h"
#include "features/pipeline.h"
#include "metrics/metric.h"
#include "models/adult_features.h"
#include "models/uniform_features.h"
#include "test_support.h"

namespace tabforge::linear {
namespace {

// Numeric rows: uniform features on widening scales.
features::FeatureMatrix Numeric(std::int64_t rows, int dims, std::uint64_t seed) {
  return testing::UniformFeatures(rows, dims, seed, true);
}

TEST(Linear, LbfgsFindsTheRosenbrockMinimum) {
  std::vector<double> x = {-1.2, 1.0};
  const int iterations = MinimizeLbfgs(
      [](const std::vector<double>& p, std::vector<double>& g) {
        const double a = 1 - p[0], b = p[1] - p[0] * p[0];
        g[0] = -2 * a - 400 * p[0] * b;
        g[1] = 200 * b;
        return a * a + 100 * b * b;
      },
      x, 500, 1e-9);
  EXPECT_LT(iterations, 500);
  EXPECT_NEAR(x[0], 1.0, 1e-5);
  EXPECT_NEAR(x[1], 1.0, 1e-5);
}

// Without a penalty, ridge regression is least squares: its predictions are the closed-form
// solution's (normal equations solved here by Gaussian elimination on the raw features).
TEST(Linear, UnpenalizedRegressionMatchesTheClosedForm) {
  const std::int64_t rows = 500;
  const int dims = 3;
  const features::FeatureMatrix x = Numeric(rows, dims, 1);
  std::vector<double> y;
  for (std::int64_t row = 0; row < rows; ++row) {
    y.push_back(2.0 + 1.5 * x.NumericColumn(0)[row] - 0.7 * x.NumericColumn(1)[row] +
                0.2 * x.NumericColumn(2)[row] + 0.3 * (RandomUniform(2, 0, row) - 0.5));
  }
  // Normal equations over [1, x0, x1, x2].
  const int n = dims + 1;
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (std::int64_t row = 0; row < rows; ++row) {
    std::vector<double> v = {1.0};
    for (int f = 0; f < dims; ++f) v.push_back(x.NumericColumn(f)[row]);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) a[i][j] += v[i] * v[j];
      a[i][n] += v[i] * y[row];
    }
  }
  for (int i = 0; i < n; ++i) {
    for (int k = i + 1; k < n; ++k) {
      const double factor = a[k][i] / a[i][i];
      for (int j = i; j <= n; ++j) a[k][j] -= factor * a[i][j];
    }
  }
  std::vector<double> beta(n);
  for (int i = n - 1; i >= 0; --i) {
    double sum = a[i][n];
    for (int j = i + 1; j < n; ++j) sum -= a[i][j] * beta[j];
    beta[i] = sum / a[i][i];
  }
  models::Task task;
  task.problem_type = ProblemType::kRegression;
  task.num_classes = 1;
  auto model = CreateLinearModel(R"({"penalty": "none"})", task);
  model->Fit(x, y, nullptr, {}, models::FitContext());
  const std::vector<double> predicted = model->Predict(x, 1);
  for (std::int64_t row = 0; row < rows; ++row) {
    double expected = beta[0];
    for (int f = 0; f < dims; ++f) expected += beta[f + 1] * x.NumericColumn(f)[row];
    ASSERT_NEAR(predicted[row], expected, 1e-5) << row;
  }
}

// At the optimum of the unpenalized log loss the intercept's gradient vanishes: the mean
// predicted probability of each class is its frequency.
TEST(Linear, LogisticRegressionReachesItsOptimum) {
  const std::int64_t rows = 2000;
  const features::FeatureMatrix x = Numeric(rows, 4, 3);
  for (int classes : {2, 3}) {
    std::vector<double> y;
    for (std::int64_t row = 0; row < rows; ++row) {
      const double score = x.NumericColumn(0)[row] - 0.5 * x.NumericColumn(2)[row] +
                           2 * (RandomUniform(4, 0, row) - 0.5);
      y.push_back(classes == 2 ? (score > 0 ? 1.0 : 0.0)
                               : (score < -0.4  ? 0.0
                                  : score < 0.4 ? 1.0
                                                : 2.0));
    }
    models::Task task;
    task.problem_type = classes == 2 ? ProblemType::kBinary : ProblemType::kMulticlass;
    task.num_classes = classes;
    auto model = CreateLinearModel(R"({"penalty": "none", "tol": 1e-8, "max_iter": 1000})", task);
    model->Fit(x, y, nullptr, {}, models::FitContext());
    const std::vector<double> p = model->Predict(x, 2);
    ASSERT_EQ(p.size(), std::size_t(rows * classes));
    for (int k = 0; k < classes; ++k) {
      double predicted = 0, observed = 0;
      for (std::int64_t row = 0; row < rows; ++row) {
        predicted += p[row * classes + k];
        observed += y[row] == k;
      }
      EXPECT_NEAR(predicted / rows, observed / rows, 1e-5) << classes << " classes, class " << k;
    }
    for (std::int64_t row = 0; row < rows; ++row) {
      double sum = 0;
      for (int k = 0; k < classes; ++k) sum += p[row * classes + k];
      ASSERT_NEAR(sum, 1.0, 1e-12);
    }
    const std::string bytes = model->Serialize();
    EXPECT_EQ(DeserializeLinearModel(bytes, "lr.bin", task)->Predict(x, 1), p);
    EXPECT_THROW(DeserializeLinearModel(bytes.substr(1), "lr.bin", task), InvalidInput);
  }
}

TEST(Linear, ParametersAreValidatedWithTheirNames) {
  auto message = [](const std::string& json) {
    return testing::InvalidInputMessage([&] { LinearParams::FromJson(json); });
  };
  EXPECT_NE(message(R"({"lambda": 3})").find("valid ones"), std::string::npos);
  EXPECT_NE(message(R"({"C": 0})").find("C = 0"), std::string::npos);
  EXPECT_NE(message(R"({"penalty": "elasticnet"})").find("l2 or none"), std::string::npos);
  EXPECT_NE(message(R"({"transform": "log"})").find("quantile"), std::string::npos);
  EXPECT_TRUE(message(R"({"transform": "quantile", "C": 0.5, "max_categories": 10})").empty());
}

// Adult with one-hot categoricals: scikit-learn's LogisticRegression reaches AUC 0.905.
TEST(Linear, AdultTestAuc) {
  TFG_REQUIRE_DATASETS();
  const testing::AdultFeatures adult = testing::LoadAdultFeatures();
  for (const char* params : {"{}", R"({"transform": "quantile"})"}) {
    auto model = CreateLinearModel(params, models::Task());
    model->Fit(adult.train, adult.train_labels, nullptr, {}, models::FitContext());
    const double auc =
        metrics::Score("roc_auc", adult.test_labels, {model->Predict(adult.test, 0), 2});
    EXPECT_GT(auc, 0.9) << params;
  }
}

}  // namespace
}  // namespace tabforge::linear

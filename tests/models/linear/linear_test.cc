#include "models/linear/linear.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/random.h"
#include "data/csv_reader.h"
#include "device/cuda_device.h"
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

// Infinite inputs (a float column overflows, or the data says inf) count as missing in the
// standardisation and in predictions: finite probabilities, the same as for a missing value.
TEST(Linear, InfiniteValuesCountAsMissing) {
  const std::int64_t rows = 1000;
  features::FeatureMatrix x = Numeric(rows, 3, 5);
  std::vector<double> y;
  for (std::int64_t row = 0; row < rows; ++row) {
    y.push_back(x.NumericColumn(0)[row] + 0.3 * x.NumericColumn(1)[row] >
                        0.65 * 0.5 + RandomUniform(6, 0, row) * 0.4 - 0.2
                    ? 1.0
                    : 0.0);
  }
  features::FeatureMatrix missing = x;
  float* column = x.numeric.data() + rows;  // feature 1
  float* missing_column = missing.numeric.data() + rows;
  for (std::int64_t row = 0; row < rows; row += 7) {
    column[row] = row % 2 ? INFINITY : -INFINITY;
    missing_column[row] = NAN;
  }
  models::Task task;
  task.problem_type = ProblemType::kBinary;
  task.num_classes = 2;
  for (const char* params : {R"({})", R"({"transform": "quantile"})"}) {
    auto with_infinity = CreateLinearModel(params, task);
    with_infinity->Fit(x, y, nullptr, {}, models::FitContext());
    auto with_missing = CreateLinearModel(params, task);
    with_missing->Fit(missing, y, nullptr, {}, models::FitContext());
    const std::vector<double> p = with_infinity->Predict(x, 2);
    for (double value : p) ASSERT_TRUE(std::isfinite(value)) << params;
    EXPECT_EQ(p, with_missing->Predict(missing, 2)) << params;
  }
}

// OWL-QN on 0.5 x'Ax - b'x + sum l1_i |x_i| (A positive definite, coupled entries): at the
// answer every penalised entry at zero has |gradient| <= l1_i, every other entry's gradient is
// -l1_i sign(x_i), and the penalty sets some entries exactly to zero.
TEST(Linear, OwlqnMeetsTheL1OptimalityConditions) {
  const int n = 12;
  std::vector<double> m(n * n), a(n * n, 0.0), b(n);
  for (int at = 0; at < n * n; ++at) m[at] = RandomUniform(5, 0, at) - 0.5;
  for (int i = 0; i < n; ++i) {
    b[i] = 2 * (RandomUniform(5, 1, i) - 0.5);
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) a[i * n + j] += m[k * n + i] * m[k * n + j];
    }
    a[i * n + i] += 0.5;
  }
  std::vector<double> l1(n, 0.4);
  l1[0] = 0;  // one unpenalised entry, as an intercept
  auto gradient_at = [&](const std::vector<double>& x, std::vector<double>& g) {
    double value = 0;
    for (int i = 0; i < n; ++i) {
      g[i] = -b[i];
      for (int j = 0; j < n; ++j) g[i] += a[i * n + j] * x[j];
      value += 0.5 * x[i] * (g[i] - b[i]);
    }
    return value;
  };
  std::vector<double> x(n, 0.0);
  const int iterations = MinimizeLbfgs(gradient_at, x, 1000, 1e-10, l1);
  EXPECT_LT(iterations, 1000);
  std::vector<double> g(n);
  gradient_at(x, g);
  int zeros = 0;
  for (int i = 0; i < n; ++i) {
    if (x[i] == 0 && l1[i] > 0) {
      ++zeros;
      EXPECT_LE(std::fabs(g[i]), l1[i] + 1e-6) << i;
    } else {
      // The optimiser also stops once the objective changes by under 1e-12 relative.
      EXPECT_NEAR(g[i] + (x[i] > 0 ? l1[i] : -l1[i]) * (l1[i] > 0), 0.0, 1e-6) << i;
    }
  }
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, n - 1);
  // Without coupling the answer is the soft threshold of b_i / a_ii.
  std::vector<double> y(n, 0.0);
  MinimizeLbfgs(
      [&](const std::vector<double>& p, std::vector<double>& gradient) {
        double value = 0;
        for (int i = 0; i < n; ++i) {
          gradient[i] = a[i * n + i] * p[i] - b[i];
          value += 0.5 * a[i * n + i] * p[i] * p[i] - b[i] * p[i];
        }
        return value;
      },
      y, 1000, 1e-12, l1);
  for (int i = 0; i < n; ++i) {
    const double shrunk = std::max(std::fabs(b[i]) - l1[i], 0.0) / a[i * n + i];
    EXPECT_NEAR(y[i], b[i] < 0 ? -shrunk : shrunk, 1e-7) << i;
  }
}

// Lasso and L1 logistic regression on two informative and four noise features: the noise
// features get weight exactly zero (moving them leaves every prediction unchanged), the
// informative ones do not; a vanishing penalty gives least squares back.
TEST(Linear, L1PenaltiesDropTheNoiseFeatures) {
  const std::int64_t rows = 3000;
  const int dims = 6;
  const features::FeatureMatrix x = Numeric(rows, dims, 7);
  std::vector<double> target, classes;
  for (std::int64_t row = 0; row < rows; ++row) {
    const double signal = 2 * x.NumericColumn(0)[row] - 1.5 * x.NumericColumn(1)[row];
    target.push_back(signal + 0.3 * (RandomUniform(8, 0, row) - 0.5));
    classes.push_back(signal + 1.2 * (RandomUniform(8, 1, row) - 0.5) > -0.5 ? 1.0 : 0.0);
  }
  auto moved = [&](int feature) {
    features::FeatureMatrix copy = x;
    for (std::int64_t row = 0; row < rows; ++row) {
      copy.numeric[feature * rows + row] = static_cast<float>(RandomUniform(9, feature, row) * 3);
    }
    return copy;
  };
  models::Task regression;
  regression.problem_type = ProblemType::kRegression;
  regression.num_classes = 1;
  const std::vector<std::pair<std::string, models::Task>> cases = {
      {R"({"penalty": "l1", "alpha": 0.02})", regression},
      {R"({"penalty": "elasticnet", "alpha": 0.03, "l1_ratio": 0.7})", regression},
      {R"({"penalty": "l1", "C": 0.01})", models::Task()},
  };
  for (const auto& [params, task] : cases) {
    auto model = CreateLinearModel(params, task);
    const std::vector<double>& labels =
        task.problem_type == ProblemType::kRegression ? target : classes;
    model->Fit(x, labels, nullptr, {}, models::FitContext());
    const std::vector<double> base = model->Predict(x, 1);
    for (int feature = 2; feature < dims; ++feature) {
      EXPECT_EQ(model->Predict(moved(feature), 1), base) << params << " feature " << feature;
    }
    for (int feature = 0; feature < 2; ++feature) {
      EXPECT_NE(model->Predict(moved(feature), 1), base) << params << " feature " << feature;
    }
    const std::string bytes = model->Serialize();
    EXPECT_EQ(DeserializeLinearModel(bytes, "lr.bin", task)->Predict(x, 1), base);
  }
  auto lasso = CreateLinearModel(R"({"penalty": "l1", "alpha": 1e-9, "tol": 1e-10,
                                     "max_iter": 2000})",
                                 regression);
  auto least_squares = CreateLinearModel(R"({"penalty": "none"})", regression);
  lasso->Fit(x, target, nullptr, {}, models::FitContext());
  least_squares->Fit(x, target, nullptr, {}, models::FitContext());
  const std::vector<double> p = lasso->Predict(x, 1), q = least_squares->Predict(x, 1);
  for (std::int64_t row = 0; row < rows; ++row) ASSERT_NEAR(p[row], q[row], 1e-6) << row;
}

TEST(Linear, ParametersAreValidatedWithTheirNames) {
  auto message = [](const std::string& json) {
    return testing::InvalidInputMessage([&] { LinearParams::FromJson(json); });
  };
  EXPECT_NE(message(R"({"lambda": 3})").find("valid ones"), std::string::npos);
  EXPECT_NE(message(R"({"C": 0})").find("C = 0"), std::string::npos);
  EXPECT_NE(message(R"({"penalty": "l3"})").find("l2, l1, elasticnet or none"), std::string::npos);
  EXPECT_NE(message(R"({"penalty": "elasticnet", "l1_ratio": 1.5})").find("l1_ratio = 1.5"),
            std::string::npos);
  EXPECT_NE(message(R"({"transform": "log"})").find("quantile"), std::string::npos);
  EXPECT_TRUE(message(R"({"transform": "quantile", "C": 0.5, "max_categories": 10})").empty());
  EXPECT_TRUE(message(R"({"penalty": "elasticnet", "l1_ratio": 0.3})").empty());
}

// "device": "cuda" fits on the GPU where one is usable; elsewhere it fits the same model on the
// CPU and says why.
TEST(Linear, CudaDeviceRunsThereOrFallsBackWithTheReason) {
  const features::FeatureMatrix x = Numeric(2000, 3, 21);
  std::vector<double> y;
  for (std::int64_t row = 0; row < x.num_rows; ++row) {
    y.push_back(x.NumericColumn(1)[row] + RandomUniform(22, 0, row) > 1.5 ? 1.0 : 0.0);
  }
  auto cpu = CreateLinearModel("{}", models::Task());
  auto asked = CreateLinearModel(R"({"device": "cuda"})", models::Task());
  cpu->Fit(x, y, nullptr, {}, models::FitContext());
  asked->Fit(x, y, nullptr, {}, models::FitContext());
  EXPECT_EQ(cpu->Info().device, "cpu");
  EXPECT_TRUE(cpu->Info().device_note.empty());
  if (device::QueryCudaDevice(0).usable) {
    EXPECT_EQ(asked->Info().device.rfind("cuda:", 0), 0u) << asked->Info().device_note;
  } else {
    EXPECT_EQ(asked->Info().device, "cpu");
    EXPECT_EQ(asked->Info().device_note.rfind("CUDA not used: ", 0), 0u)
        << asked->Info().device_note;
    EXPECT_EQ(asked->Predict(x, 1), cpu->Predict(x, 1));
  }
}

// Adult with one-hot categoricals: scikit-learn's LogisticRegression reaches AUC 0.905.
TEST(Linear, AdultTestAuc) {
  TFG_REQUIRE_DATASETS();
  const testing::AdultFeatures adult = testing::LoadAdultFeatures();
  for (const char* params : {"{}", R"({"transform": "quantile"})", R"({"penalty": "l1"})"}) {
    auto model = CreateLinearModel(params, models::Task());
    model->Fit(adult.train, adult.train_labels, nullptr, {}, models::FitContext());
    const double auc =
        metrics::Score("roc_auc", adult.test_labels, {model->Predict(adult.test, 0), 2});
    EXPECT_GT(auc, 0.9) << params;
  }
}

}  // namespace
}  // namespace tabforge::linear

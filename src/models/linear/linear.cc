#include "models/linear/linear.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/serialize.h"
#include "core/timer.h"
#include "models/dense_encoder.h"
#include "models/linear/linear_device.h"
#include "models/param_json.h"

namespace tabforge::linear {
namespace {

constexpr std::string_view kModelMagic = "tabforge-linear";
constexpr std::uint32_t kModelVersion = 1;

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Design cells (rows x columns) from which a GPU granted automatically fits linear models.
constexpr double kGpuWorthwhileCells = 1e7;

[[noreturn]] void OutOfRange(const std::string& name, double value, const std::string& range) {
  throw InvalidInput(fmt::format("LR parameter {} = {} is out of range: {}", name, value, range));
}

// The rows as the model sees them: numeric columns dense, one-hot columns as the index of the
// one set column per (row, categorical feature).
struct Design {
  Matrix numeric;                 // rows x numeric columns
  std::vector<std::int32_t> hot;  // row-major rows x categorical, absolute column indices
  int categorical = 0;
  int columns = 0;  // numeric + one-hot columns

  static Design Of(const models::DenseEncoder& encoder, const features::FeatureMatrix& features,
                   int threads) {
    Design design;
    const std::vector<float> numeric = encoder.TransformNumeric(features, threads);
    design.numeric =
        Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            numeric.data(), features.num_rows, encoder.num_numeric())
            .cast<double>();
    design.hot = encoder.OneHotColumns(features, threads);
    design.categorical = encoder.num_categorical();
    design.columns = encoder.num_columns();
    return design;
  }
  std::int64_t rows() const { return numeric.rows(); }
  // scores = X W (rows x outputs); W row-major columns x outputs.
  Matrix Times(const double* w, int outputs) const {
    const int numeric_columns = static_cast<int>(numeric.cols());
    const Eigen::Map<const Matrix> numeric_w(w, numeric_columns, outputs);
    Matrix scores = numeric * numeric_w;
    for (std::int64_t row = 0; row < rows(); ++row) {
      for (int feature = 0; feature < categorical; ++feature) {
        const double* column_w = w + std::ptrdiff_t(hot[row * categorical + feature]) * outputs;
        for (int k = 0; k < outputs; ++k) scores(row, k) += column_w[k];
      }
    }
    return scores;
  }
  // gradient = X^T R (columns x outputs, row-major), overwritten.
  void TransposeTimes(const Matrix& residual, double* gradient) const {
    const int numeric_columns = static_cast<int>(numeric.cols());
    const int outputs = static_cast<int>(residual.cols());
    Eigen::Map<Matrix> numeric_g(gradient, numeric_columns, outputs);
    numeric_g.noalias() = numeric.transpose() * residual;
    std::fill(gradient + std::ptrdiff_t(numeric_columns) * outputs,
              gradient + std::ptrdiff_t(columns) * outputs, 0.0);
    for (std::int64_t row = 0; row < rows(); ++row) {
      for (int feature = 0; feature < categorical; ++feature) {
        double* column_g = gradient + std::ptrdiff_t(hot[row * categorical + feature]) * outputs;
        for (int k = 0; k < outputs; ++k) column_g[k] += residual(row, k);
      }
    }
  }
  // The dense matrix with a last column of ones, column-major (for the GPU).
  std::vector<double> DenseColumnMajorWithOnes() const {
    const std::int64_t n = rows();
    std::vector<double> dense(static_cast<std::size_t>(n * (columns + 1)), 0.0);
    for (Eigen::Index column = 0; column < numeric.cols(); ++column) {
      for (std::int64_t row = 0; row < n; ++row) dense[column * n + row] = numeric(row, column);
    }
    for (std::int64_t row = 0; row < n; ++row) {
      for (int feature = 0; feature < categorical; ++feature) {
        dense[std::int64_t(hot[row * categorical + feature]) * n + row] = 1.0;
      }
      dense[std::int64_t(columns) * n + row] = 1.0;
    }
    return dense;
  }
  // The dense matrix (for the closed-form ridge solve).
  Matrix Dense() const {
    Matrix dense = Matrix::Zero(rows(), columns);
    dense.leftCols(numeric.cols()) = numeric;
    for (std::int64_t row = 0; row < rows(); ++row) {
      for (int feature = 0; feature < categorical; ++feature) {
        dense(row, hot[row * categorical + feature]) = 1.0;
      }
    }
    return dense;
  }
};

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t at = 0; at < a.size(); ++at) sum += a[at] * b[at];
  return sum;
}

}  // namespace

void LinearParams::Validate() const {
  if (!(C > 0)) OutOfRange("C", C, "greater than 0");
  if (!(l1_ratio >= 0 && l1_ratio <= 1)) OutOfRange("l1_ratio", l1_ratio, "from 0 to 1");
  if (!(alpha >= 0)) OutOfRange("alpha", alpha, "at least 0");
  if (max_iter < 1) OutOfRange("max_iter", max_iter, "at least 1");
  if (!(tol > 0)) OutOfRange("tol", tol, "greater than 0");
  if (max_categories < 2) OutOfRange("max_categories", max_categories, "at least 2");
  if (device != "cpu" && device != "cuda" && device != "gpu") {
    throw InvalidInput(fmt::format(
        "LR parameter device = '{}' is not supported: use cpu or cuda (gpu is taken as cuda)",
        device));
  }
}

LinearParams LinearParams::FromJson(const std::string& json) {
  LinearParams params;
  std::string penalty = "l2", categorical = "onehot", transform = "standard", solver = "lbfgs";
  auto text = [](std::string& field) {
    return models::ParamSetter{[&field](const nlohmann::json& v) { field = v.get<std::string>(); },
                               "string"};
  };
  auto number = [](auto& field) {
    return models::ParamSetter{
        [&field](const nlohmann::json& v) { field = v.get<std::decay_t<decltype(field)>>(); },
        "number"};
  };
  const std::map<std::string, models::ParamSetter> setters = {
      {"penalty",
       {[&](const nlohmann::json& v) { penalty = v.is_null() ? "none" : v.get<std::string>(); },
        "string or null"}},
      {"l1_ratio", number(params.l1_ratio)},
      {"C", number(params.C)},
      {"alpha", number(params.alpha)},
      {"max_iter", number(params.max_iter)},
      {"tol", number(params.tol)},
      {"categorical", text(categorical)},
      {"max_categories", number(params.max_categories)},
      {"transform", text(transform)},
      {"solver", text(solver)},
      {"n_jobs", {[](const nlohmann::json& v) { (void)v.get<int>(); }, "number"}},
      {"device", text(params.device)},
  };
  models::ApplyJsonParams(json, "LR", setters);
  const std::map<std::string, Penalty> penalties = {{"l2", Penalty::kL2},
                                                    {"l1", Penalty::kL1},
                                                    {"elasticnet", Penalty::kElasticNet},
                                                    {"none", Penalty::kNone}};
  const auto chosen = penalties.find(penalty);
  if (chosen == penalties.end()) {
    throw InvalidInput(fmt::format(
        "LR parameter penalty = '{}' is not supported: use l2, l1, elasticnet or none", penalty));
  }
  params.penalty = chosen->second;
  if (categorical != "onehot" && categorical != "drop") {
    throw InvalidInput(fmt::format(
        "LR parameter categorical = '{}' is not supported: use onehot or drop", categorical));
  }
  params.one_hot = categorical == "onehot";
  if (transform != "standard" && transform != "quantile") {
    throw InvalidInput(fmt::format(
        "LR parameter transform = '{}' is not supported: use standard or quantile", transform));
  }
  params.quantile = transform == "quantile";
  if (solver != "lbfgs") {
    throw InvalidInput(
        fmt::format("LR parameter solver = '{}' is not supported: use lbfgs", solver));
  }
  params.Validate();
  return params;
}

int MinimizeLbfgs(
    const std::function<double(const std::vector<double>&, std::vector<double>&)>& evaluate,
    std::vector<double>& x, int max_iter, double tol, std::span<const double> l1) {
  constexpr std::size_t kMemory = 10;
  const std::size_t size = x.size();
  const bool owl = !l1.empty();
  TFG_CHECK(!owl || l1.size() == size, "{} L1 weights for {} coefficients", l1.size(), size);
  auto penalty = [&](const std::vector<double>& point) {
    double sum = 0;
    if (owl) {
      for (std::size_t i = 0; i < size; ++i) sum += l1[i] * std::fabs(point[i]);
    }
    return sum;
  };
  // OWL-QN's pseudo-gradient: the steepest-descent direction of f + L1, negated; the gradient
  // itself without L1.
  std::vector<double> steepest(size);
  auto pseudo_gradient = [&](const std::vector<double>& point, const std::vector<double>& g) {
    for (std::size_t i = 0; i < size; ++i) {
      const double weight = owl ? l1[i] : 0.0;
      if (weight == 0) {
        steepest[i] = g[i];
      } else if (point[i] != 0) {
        steepest[i] = g[i] + (point[i] > 0 ? weight : -weight);
      } else {
        steepest[i] = g[i] + weight < 0 ? g[i] + weight : g[i] - weight > 0 ? g[i] - weight : 0.0;
      }
    }
  };
  std::vector<double> gradient(size), next(size), next_gradient(size), direction(size);
  double value = evaluate(x, gradient) + penalty(x);
  std::deque<std::pair<std::vector<double>, std::vector<double>>> history;  // (s, y)
  std::vector<double> alphas;
  int iteration = 0;
  for (; iteration < max_iter; ++iteration) {
    pseudo_gradient(x, gradient);
    double largest = 0;
    for (double entry : steepest) largest = std::max(largest, std::fabs(entry));
    if (largest <= tol) break;
    // Two-loop recursion: direction = -H gradient.
    direction = steepest;
    alphas.assign(history.size(), 0.0);
    for (std::size_t at = history.size(); at-- > 0;) {
      const auto& [s, y] = history[at];
      alphas[at] = Dot(s, direction) / Dot(y, s);
      for (std::size_t i = 0; i < size; ++i) direction[i] -= alphas[at] * y[i];
    }
    if (!history.empty()) {
      const auto& [s, y] = history.back();
      const double gamma = Dot(s, y) / Dot(y, y);
      for (double& entry : direction) entry *= gamma;
    }
    for (std::size_t at = 0; at < history.size(); ++at) {
      const auto& [s, y] = history[at];
      const double beta = Dot(y, direction) / Dot(y, s);
      for (std::size_t i = 0; i < size; ++i) direction[i] += (alphas[at] - beta) * s[i];
    }
    for (double& entry : direction) entry = -entry;
    // OWL-QN keeps only the entries that descend along the pseudo-gradient.
    if (owl) {
      for (std::size_t i = 0; i < size; ++i) {
        if (l1[i] > 0 && direction[i] * steepest[i] >= 0) direction[i] = 0;
      }
    }
    double slope = Dot(steepest, direction);
    if (!(slope < 0)) {
      history.clear();
      for (std::size_t i = 0; i < size; ++i) direction[i] = -steepest[i];
      slope = -Dot(steepest, steepest);
    }
    // Backtracking (Armijo); the first step is scaled to a unit move. Under L1 each trial point
    // is projected onto the orthant of x (or, for entries at zero, of the descent direction).
    double step = history.empty() ? std::min(1.0, 1.0 / std::sqrt(-slope)) : 1.0;
    double next_value = 0;
    bool accepted = false;
    for (int tries = 0; tries < 40; ++tries) {
      for (std::size_t i = 0; i < size; ++i) next[i] = x[i] + step * direction[i];
      double bound = value + 1e-4 * step * slope;
      if (owl) {
        double decrease = 0;
        for (std::size_t i = 0; i < size; ++i) {
          const double orthant = x[i] != 0 ? x[i] : -steepest[i];
          if (l1[i] > 0 && next[i] * orthant <= 0) next[i] = 0;
          decrease += steepest[i] * (next[i] - x[i]);
        }
        bound = value + 1e-4 * decrease;
      }
      next_value = evaluate(next, next_gradient) + penalty(next);
      if (std::isfinite(next_value) && next_value <= bound) {
        accepted = true;
        break;
      }
      step *= 0.5;
    }
    if (!accepted) {
      // A quasi-Newton direction that finds no decrease is dropped once for steepest descent.
      if (history.empty()) break;
      history.clear();
      continue;
    }
    std::vector<double> s(size), y(size);
    for (std::size_t i = 0; i < size; ++i) {
      s[i] = next[i] - x[i];
      y[i] = next_gradient[i] - gradient[i];
    }
    if (Dot(s, y) > 1e-12) {
      history.emplace_back(std::move(s), std::move(y));
      if (history.size() > kMemory) history.pop_front();
    }
    const double change = value - next_value;
    x.swap(next);
    gradient.swap(next_gradient);
    value = next_value;
    if (change <= 1e-12 * std::max(1.0, std::fabs(value))) {
      ++iteration;
      break;
    }
  }
  return iteration;
}

namespace {

class LinearModel final : public models::Model {
 public:
  LinearModel(LinearParams params, const models::Task& task)
      : params_(std::move(params)), task_(task) {}

  void Fit(const features::FeatureMatrix& train, std::span<const double> labels,
           const features::FeatureMatrix* /*valid*/, std::span<const double> /*valid_labels*/,
           const models::FitContext& context) override {
    Stopwatch watch;
    models::DenseEncoderOptions options;
    options.one_hot = params_.one_hot;
    options.max_categories = params_.max_categories;
    options.quantile = params_.quantile;
    options.threads = context.threads;
    encoder_ = models::DenseEncoder::Fit(train, options);
    const Design x = Design::Of(encoder_, train, context.threads);
    const int dims = encoder_.num_columns();
    const bool regression = task_.problem_type == ProblemType::kRegression;
    outputs_ = regression || task_.num_classes == 2 ? 1 : task_.num_classes;
    weights_.assign(static_cast<std::size_t>(dims) * outputs_, 0.0);
    intercepts_.assign(static_cast<std::size_t>(outputs_), 0.0);
    iterations_ = 0;
    device_ = "cpu";
    device_note_.clear();
    const LossKind loss = regression      ? LossKind::kSquared
                          : outputs_ == 1 ? LossKind::kLogistic
                                          : LossKind::kSoftmax;
    // Lasso and ElasticNet fit the target over its standard deviation (the penalty rescaled to
    // match), so that tol means the same for targets of any scale.
    const bool closed_form =
        regression && (params_.penalty == Penalty::kL2 || params_.penalty == Penalty::kNone);
    double target_scale = 1;
    std::vector<double> scaled;
    std::span<const double> fit_labels = labels;
    if (regression && !closed_form) {
      double mean = 0, squares = 0;
      for (double label : labels) mean += label;
      mean /= double(labels.size());
      for (double label : labels) squares += (label - mean) * (label - mean);
      const double deviation = std::sqrt(squares / double(labels.size()));
      if (deviation > 0 && std::isfinite(deviation)) target_scale = deviation;
      for (double label : labels) scaled.push_back(label / target_scale);
      fit_labels = scaled;
    }
    // A granted GPU fits the model unless it was granted automatically and the data is too
    // small for the device to beat the CPU; a device that fails to take the data leaves the fit
    // on the CPU.
    std::unique_ptr<DeviceDesign> device;
    const double cells = double(x.rows()) * double(dims + 1);
    if (params_.device != "cpu" || context.num_gpus > 0) {
      if (params_.device == "cpu" && context.gpus_auto && cells < kGpuWorthwhileCells) {
        device_note_ = fmt::format(
            "{:.0f} design cells, under the {:.0f} from which the GPU beats the CPU; --gpus 1 "
            "forces it",
            cells, kGpuWorthwhileCells);
      } else {
        std::string why;
        try {
          device = UploadDesign(x.DenseColumnMajorWithOnes(), x.rows(), dims + 1, fit_labels.data(),
                                loss, outputs_, 0, context.gpu_memory_fraction, why);
        } catch (const CudaError& error) {
          why = error.what();
        }
        if (device) {
          device_ = device->device_name();
        } else {
          device_note_ = "CUDA not used: " + why + "; fitted on the CPU";
        }
      }
    }
    if (closed_form) {
      FitRidge(x, labels, device.get());
    } else {
      FitIterative(x, fit_labels, loss, device.get(), target_scale);
    }
    fit_seconds_ = watch.Seconds();
  }

  std::vector<double> Predict(const features::FeatureMatrix& features, int threads) const override {
    const Design x = Design::Of(encoder_, features, threads);
    const std::int64_t rows = features.num_rows;
    Matrix scores = x.Times(weights_.data(), outputs_);
    for (int k = 0; k < outputs_; ++k) scores.col(k).array() += intercepts_[k];
    const int columns = task_.outputs();
    std::vector<double> out(static_cast<std::size_t>(rows * columns));
    for (std::int64_t row = 0; row < rows; ++row) {
      double* into = out.data() + row * columns;
      if (task_.problem_type == ProblemType::kRegression) {
        into[0] = scores(row, 0);
      } else if (outputs_ == 1) {
        const double positive = 1.0 / (1.0 + std::exp(-scores(row, 0)));
        into[0] = 1.0 - positive;
        into[1] = positive;
      } else {
        const double top = scores.row(row).maxCoeff();
        double total = 0;
        for (int k = 0; k < outputs_; ++k) total += (into[k] = std::exp(scores(row, k) - top));
        for (int k = 0; k < outputs_; ++k) into[k] /= total;
      }
    }
    return out;
  }

  std::string Serialize() const override {
    ByteWriter writer = ByteWriter::Framed(kModelMagic, kModelVersion);
    encoder_.Write(writer);
    writer.Put<std::int32_t>(outputs_);
    writer.PutVector(weights_);
    writer.PutVector(intercepts_);
    writer.Put<std::int32_t>(iterations_);
    return std::move(writer).Frame();
  }

  static std::unique_ptr<LinearModel> Deserialize(std::string_view bytes, const std::string& name,
                                                  const models::Task& task) {
    ByteReader reader(UnframeBytes(bytes, kModelMagic, kModelVersion, name), name);
    auto model = std::make_unique<LinearModel>(LinearParams(), task);
    model->encoder_ = models::DenseEncoder::Read(reader);
    model->outputs_ = reader.Get<std::int32_t>();
    model->weights_ = reader.GetVector<double>();
    model->intercepts_ = reader.GetVector<double>();
    model->iterations_ = reader.Get<std::int32_t>();
    if (model->outputs_ < 1 || model->intercepts_.size() != std::size_t(model->outputs_) ||
        model->weights_.size() !=
            std::size_t(model->encoder_.num_columns()) * std::size_t(model->outputs_)) {
      reader.Corrupted("coefficients do not match the features");
    }
    if (!reader.AtEnd()) reader.Corrupted("bytes after the model");
    return model;
  }

  models::ModelInfo Info() const override {
    models::ModelInfo info;
    info.family = "LR";
    info.iterations = iterations_;
    info.fit_seconds = fit_seconds_;
    info.device = device_;
    info.device_note = device_note_;
    return info;
  }

  std::unique_ptr<models::Model> CloneForRefit(int /*iterations*/) const override {
    return std::make_unique<LinearModel>(params_, task_);
  }

 private:
  // Ridge: minimises ||y - X w - b||^2 + alpha ||w||^2 (normal equations on centred data).
  // On the GPU the products X^T X and X^T y are taken there, over the design with its column of
  // ones, and centred here.
  void FitRidge(const Design& design, std::span<const double> labels, DeviceDesign* device) {
    const int dims = design.columns;
    Eigen::MatrixXd gram(dims, dims);
    Eigen::VectorXd rhs(dims), means(dims);
    double y_mean = 0;
    if (device != nullptr) {
      std::vector<double> full_gram, full_rhs;
      device->NormalEquations(full_gram, full_rhs);
      const double n = double(design.rows());
      const Eigen::Map<const Matrix> g(full_gram.data(), dims + 1, dims + 1);
      means = g.row(dims).head(dims).transpose() / n;
      y_mean = full_rhs[dims] / n;
      gram = g.topLeftCorner(dims, dims) - n * means * means.transpose();
      for (int at = 0; at < dims; ++at) rhs[at] = full_rhs[at] - n * means[at] * y_mean;
    } else {
      const Matrix x = design.Dense();
      const Eigen::Map<const Eigen::VectorXd> y(labels.data(), x.rows());
      means = x.colwise().mean().transpose();
      y_mean = y.mean();
      const Matrix centred = x.rowwise() - means.transpose();
      gram = centred.transpose() * centred;
      rhs = centred.transpose() * (y.array() - y_mean).matrix();
    }
    const double alpha = params_.penalty == Penalty::kL2 ? params_.alpha : 0.0;
    gram.diagonal().array() += std::max(alpha, 1e-10);
    const Eigen::VectorXd w = gram.ldlt().solve(rhs);
    for (Eigen::Index at = 0; at < w.size(); ++at) weights_[at] = w[at];
    intercepts_[0] = y_mean - means.dot(w);
  }

  // The mean loss over the rows at theta = (W; b) and its gradient, on the CPU.
  static double HostMeanLoss(const Design& x, std::span<const double> labels, LossKind loss,
                             int outputs, const std::vector<double>& theta,
                             std::vector<double>& gradient, Matrix& residual) {
    const std::int64_t rows = x.rows();
    const int dims = x.columns;
    Matrix scores = x.Times(theta.data(), outputs);
    for (int k = 0; k < outputs; ++k) scores.col(k).array() += theta[dims * outputs + k];
    double total = 0;
    for (std::int64_t row = 0; row < rows; ++row) {
      if (loss == LossKind::kSquared) {
        const double difference = scores(row, 0) - labels[row];
        total += 0.5 * difference * difference;
        residual(row, 0) = difference;
        continue;
      }
      const int label = static_cast<int>(labels[row]);
      if (loss == LossKind::kLogistic) {
        const double z = scores(row, 0);
        // log(1 + e^z) - y z, stable for large |z|.
        total += (z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z))) -
                 (label == 1 ? z : 0.0);
        residual(row, 0) = 1.0 / (1.0 + std::exp(-z)) - (label == 1 ? 1.0 : 0.0);
      } else {
        const double top = scores.row(row).maxCoeff();
        double sum = 0;
        for (int k = 0; k < outputs; ++k) sum += std::exp(scores(row, k) - top);
        total += top + std::log(sum) - scores(row, label);
        for (int k = 0; k < outputs; ++k) {
          residual(row, k) = std::exp(scores(row, k) - top) / sum - (k == label ? 1.0 : 0.0);
        }
      }
    }
    const double scale = 1.0 / double(rows);
    x.TransposeTimes(residual, gradient.data());
    Eigen::Map<Matrix> gradient_w(gradient.data(), dims, outputs);
    gradient_w *= scale;
    const Eigen::RowVectorXd sums = residual.colwise().sum() * scale;
    for (int k = 0; k < outputs; ++k) gradient[dims * outputs + k] = sums[k];
    return total * scale;
  }

  // Logistic regression (the mean log loss plus P(W) / (C n)), Lasso and ElasticNet (the mean
  // of (y - X w - b)^2 / 2 plus alpha P(w)), by L-BFGS over (W, b), OWL-QN with an L1 term.
  // Regression labels come divided by `target_scale` (s): the problem solved is the same one
  // with w / s, whose L1 weight is alpha l1_ratio / s and L2 weight alpha (1 - l1_ratio).
  void FitIterative(const Design& x, std::span<const double> labels, LossKind loss,
                    DeviceDesign* device, double target_scale) {
    const std::int64_t rows = x.rows();
    const int dims = x.columns;
    const int outputs = outputs_;
    const double strength =
        loss == LossKind::kSquared ? params_.alpha : 1.0 / (params_.C * double(rows));
    const double l1_share = params_.penalty == Penalty::kL1           ? 1.0
                            : params_.penalty == Penalty::kElasticNet ? params_.l1_ratio
                                                                      : 0.0;
    const double l2 = params_.penalty == Penalty::kNone ? 0.0 : strength * (1 - l1_share);
    std::vector<double> theta(static_cast<std::size_t>((dims + 1) * outputs), 0.0);
    std::vector<double> l1;
    if (l1_share > 0) {
      // The intercepts are not penalised.
      l1.assign(theta.size(), strength * l1_share / target_scale);
      std::fill(l1.begin() + std::ptrdiff_t(dims) * outputs, l1.end(), 0.0);
    }
    if (loss == LossKind::kSquared) {
      // Start from the mean: the intercept's optimum with every weight at zero.
      double sum = 0;
      for (double label : labels) sum += label;
      theta[dims] = sum / double(rows);
    }
    Matrix residual(device != nullptr ? 0 : rows, outputs);
    auto evaluate = [&](const std::vector<double>& point, std::vector<double>& gradient) {
      const double mean_loss =
          device != nullptr ? device->MeanLoss(point, gradient)
                            : HostMeanLoss(x, labels, loss, outputs, point, gradient, residual);
      const Eigen::Map<const Matrix> w(point.data(), dims, outputs);
      Eigen::Map<Matrix> gradient_w(gradient.data(), dims, outputs);
      gradient_w += l2 * w;
      return mean_loss + 0.5 * l2 * w.squaredNorm();
    };
    iterations_ = MinimizeLbfgs(evaluate, theta, params_.max_iter, params_.tol, l1);
    if (target_scale != 1) {
      for (double& entry : theta) entry *= target_scale;
    }
    std::copy(theta.begin(), theta.begin() + std::ptrdiff_t(dims) * outputs, weights_.begin());
    std::copy(theta.begin() + std::ptrdiff_t(dims) * outputs, theta.end(), intercepts_.begin());
  }

  LinearParams params_;
  models::Task task_;
  models::DenseEncoder encoder_;
  int outputs_ = 1;              // score columns: 1 (binary, regression) or classes
  std::vector<double> weights_;  // row-major dims x outputs_
  std::vector<double> intercepts_;
  int iterations_ = 0;
  double fit_seconds_ = 0;
  std::string device_ = "cpu";  // where the fit ran: "cpu" or "cuda:N NAME"
  std::string device_note_;
};

}  // namespace

std::unique_ptr<models::Model> CreateLinearModel(const std::string& hyperparameters_json,
                                                 const models::Task& task) {
  return std::make_unique<LinearModel>(LinearParams::FromJson(hyperparameters_json), task);
}

std::unique_ptr<models::Model> DeserializeLinearModel(std::string_view bytes,
                                                      const std::string& name,
                                                      const models::Task& task) {
  return LinearModel::Deserialize(bytes, name, task);
}

}  // namespace tabforge::linear

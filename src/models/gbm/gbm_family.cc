#include "models/gbm/gbm_family.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/timer.h"
#include "metrics/metric.h"
#include "models/gbm/gbm.h"

namespace tabforge::gbm {
namespace {

// Feature cells (rows x features) from which a GPU granted automatically trains the GBM: below
// it the per-split launches cost more than the CPU's histograms.
constexpr std::int64_t kGpuWorthwhileCells = 2000000;

// AutoGluon's defaults for its LightGBM models, under LightGBM's names.
GbmParams AutoGluonDefaults() {
  GbmParams params;
  params.learning_rate = 0.05;
  params.num_iterations = 10000;
  params.early_stopping_round = -1;  // adaptive
  return params;
}

class GbmFamilyModel final : public models::Model {
 public:
  GbmFamilyModel(GbmParams params, const models::Task& task) : params_(std::move(params)) {
    if (task.problem_type == ProblemType::kRegression) {
      if (!IsRegressionObjective(params_.objective)) params_.objective = "regression";
    } else {
      params_.objective = task.problem_type == ProblemType::kBinary ? "binary" : "multiclass";
    }
    params_.num_class = task.problem_type == ProblemType::kMulticlass ? task.num_classes : 1;
    // Classification stops on the log loss (LightGBM's default metric) whatever the eval
    // metric; regression on the eval metric. A metric read from argmax labels (accuracy, f1,
    // ...) is too coarse on a few thousand validation rows to tell rounds apart. A ranking
    // metric (roc_auc, average_precision) peaks once the order of the rows settles, which can
    // be after a few rounds while the probabilities are still near the prior: a stacked model
    // whose inputs already rank the rows stops there, its fold models then differ in scale
    // and their pooled out-of-fold predictions rank worse than any one fold's (Adult, 8
    // folds, one stack level: GBM_BAG_L2 0.915 out of fold under roc_auc, 0.928 under the
    // log loss; level-1 models score the same either way).
    if (params_.metric.empty()) {
      const metrics::MetricInfo& info = metrics::GetMetric(task.eval_metric);
      params_.metric =
          task.problem_type != ProblemType::kRegression ? "log_loss" : std::string(info.name);
    }
    params_.Validate();
  }
  GbmFamilyModel(GbmModel model, GbmParams params)
      : params_(std::move(params)), model_(std::move(model)), fitted_(true) {}

  // Whether gpu_memory_fraction came with the model's own parameters (else the fit's applies).
  void KeepMemoryFraction(bool keep) { params_given_memory_fraction_ = keep; }

  void Fit(const features::FeatureMatrix& train, std::span<const double> labels,
           const features::FeatureMatrix* valid, std::span<const double> valid_labels,
           const models::FitContext& context) override {
    Stopwatch watch;
    GbmParams params = params_;
    params.seed ^= context.seed;
    // A granted GPU trains the GBM unless it was granted automatically and the data is too
    // small for the device to beat the CPU.
    const std::int64_t cells =
        train.num_rows * std::int64_t(train.num_numeric() + train.num_categorical());
    auto_note_.clear();
    if (!params_given_memory_fraction_) params.gpu_memory_fraction = context.gpu_memory_fraction;
    if (params.device == "cpu" && context.num_gpus > 0) {
      if (!context.gpus_auto || cells >= kGpuWorthwhileCells) {
        params.device = "cuda";
      } else {
        auto_note_ = fmt::format(
            "{} feature cells, under the {} from which the GPU beats the CPU; --gpus 1 forces it",
            cells, kGpuWorthwhileCells);
      }
    }
    model_ = GbmModel::Fit(train, labels, {}, valid, valid_labels, params, context.threads,
                           context.deadline);
    fit_seconds_ = watch.Seconds();
    fitted_ = true;
  }

  std::vector<double> Predict(const features::FeatureMatrix& features, int threads) const override {
    return model_.Predict(features, threads);
  }

  std::string Serialize() const override { return model_.Serialize(); }

  models::ModelInfo Info() const override {
    models::ModelInfo info;
    info.family = "GBM";
    info.iterations = model_.report().iterations;
    info.stop_reason = model_.report().stop_reason;
    info.fit_seconds = fit_seconds_;
    info.device = model_.report().device;
    info.device_note =
        model_.report().device_note.empty() ? auto_note_ : model_.report().device_note;
    return info;
  }

  std::unique_ptr<models::Model> CloneForRefit(int iterations) const override {
    GbmParams params = params_;
    if (iterations > 0) params.num_iterations = iterations;
    params.early_stopping_round = 0;
    auto clone = std::make_unique<GbmFamilyModel>(*this);
    clone->params_ = params;
    clone->model_ = GbmModel();
    clone->fitted_ = false;
    return clone;
  }

 private:
  GbmParams params_;
  GbmModel model_;
  bool fitted_ = false;
  double fit_seconds_ = 0;
  std::string auto_note_;  // why a GPU granted automatically was not used
  bool params_given_memory_fraction_ = false;
};

}  // namespace

std::unique_ptr<models::Model> CreateGbmModel(const std::string& hyperparameters_json,
                                              const models::Task& task) {
  const std::string json = hyperparameters_json.empty() ? "{}" : hyperparameters_json;
  auto model =
      std::make_unique<GbmFamilyModel>(GbmParams::FromJson(json, AutoGluonDefaults()), task);
  // A fraction given with the model's parameters wins over the fit's.
  const nlohmann::json object = nlohmann::json::parse(json, nullptr, false);
  model->KeepMemoryFraction(object.is_object() && object.contains("gpu_memory_fraction"));
  return model;
}

std::unique_ptr<models::Model> DeserializeGbmModel(std::string_view bytes, const std::string& name,
                                                   const models::Task& /*task*/) {
  GbmModel model = GbmModel::Deserialize(bytes, name);
  return std::make_unique<GbmFamilyModel>(std::move(model), GbmParams());
}

}  // namespace tabforge::gbm

#include "models/forest/forest_family.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/timer.h"
#include "models/forest/forest.h"

namespace tabforge::forest {
namespace {

// Feature cells (rows x features) from which a GPU granted automatically grows random forests.
// H100 against 16 CPU threads, 300 trees (bench/results/2026-12-06-session10-gpu-forests.md,
// call 13): synthetic 28 features, 50k rows (1.4M cells) 0.54 s against 1.32 s, 100k 0.98 against
// 2.78 s, 300k 1.33 against 6.52 s; but Adult (0.46M cells) 0.62 s against 0.23 s and letter
// (0.26M) 0.47 against 0.18 s, whose small trees leave the GPU's start and rounds to dominate.
// The GBM's threshold, below which neither wins by much, serves both.
constexpr std::int64_t kGpuWorthwhileCells = 2000000;

class ForestFamilyModel final : public models::Model {
 public:
  ForestFamilyModel(std::string family, ForestParams params, const models::Task& task)
      : family_(std::move(family)), params_(std::move(params)), task_(task) {}
  ForestFamilyModel(std::string family, ForestModel model, const models::Task& task)
      : family_(std::move(family)), task_(task), model_(std::move(model)) {}

  void Fit(const features::FeatureMatrix& train, std::span<const double> labels,
           const features::FeatureMatrix* /*valid*/, std::span<const double> /*valid_labels*/,
           const models::FitContext& context) override {
    Train(train, labels, context, nullptr);
  }

  bool HasOutOfFold() const override { return params_.bootstrap; }

  void ShareAmongFolds(int folds) override {
    params_.n_estimators = std::max(1, (params_.n_estimators + folds - 1) / std::max(folds, 1));
  }

  std::vector<double> FitOutOfFold(const features::FeatureMatrix& train,
                                   std::span<const double> labels,
                                   const models::FitContext& context) override {
    std::vector<double> out_of_bag;
    Train(train, labels, context, &out_of_bag);
    return out_of_bag;
  }

  std::vector<double> Predict(const features::FeatureMatrix& features, int threads) const override {
    return model_.Predict(features, threads);
  }

  std::string Serialize() const override { return model_.Serialize(); }

  models::ModelInfo Info() const override {
    models::ModelInfo info;
    info.family = family_;
    info.iterations = model_.report().trees;
    info.stop_reason = model_.report().stop_reason;
    info.fit_seconds = fit_seconds_;
    info.device = model_.report().device;
    info.device_note =
        model_.report().device_note.empty() ? device_note_ : model_.report().device_note;
    return info;
  }

  std::unique_ptr<models::Model> CloneForRefit(int /*iterations*/) const override {
    return std::make_unique<ForestFamilyModel>(family_, params_, task_);
  }

 private:
  void Train(const features::FeatureMatrix& train, std::span<const double> labels,
             const models::FitContext& context, std::vector<double>* out_of_bag) {
    Stopwatch watch;
    ForestParams params = params_;
    params.seed ^= context.seed;
    device_note_.clear();
    const std::int64_t cells =
        train.num_rows * std::int64_t(train.num_numeric() + train.num_categorical());
    if (params.device == "cpu" && context.num_gpus > 0) {
      // A GPU granted by name grows the forest; one granted automatically does from the size
      // where it beats the CPU.
      if (!context.gpus_auto || cells >= kGpuWorthwhileCells) {
        params.device = "cuda";
        params.gpu_memory_fraction = context.gpu_memory_fraction;
      } else {
        device_note_ = fmt::format(
            "{} feature cells, under the {} from which the GPU beats the CPU; --gpus 1 forces it",
            cells, kGpuWorthwhileCells);
      }
    }
    const int classes = task_.problem_type == ProblemType::kRegression ? 1 : task_.num_classes;
    model_ = ForestModel::Fit(train, labels, classes, params, context.threads, context.deadline,
                              out_of_bag);
    fit_seconds_ = watch.Seconds();
  }

  std::string family_;
  ForestParams params_;
  models::Task task_;
  ForestModel model_;
  double fit_seconds_ = 0;
  std::string device_note_;
};

ForestParams Defaults(bool extra_trees, const models::Task& task) {
  ForestParams params;
  params.extra_trees = extra_trees;
  const bool regression = task.problem_type == ProblemType::kRegression;
  params.criterion = regression ? Criterion::kSquaredError : Criterion::kGini;
  // A regression forest's leaves average continuous targets, and its deep cuts between close
  // values count: on California housing (RF, 2 threads, random_state 0-3) max_bin 4095 gave R2
  // 0.82701 / 0.82579 / 0.82617 / 0.82704 against 0.82606 / 0.82530 / 0.82592 / 0.82649 at 1023
  // (16383: no further gain), fit 5.8-6.0 s against 5.3-5.5 s (before the grower stopped
  // sorting the bins in use; 4.2-4.5 s after); diamonds, whose features have fewer distinct
  // values, gave the same trees. XT's thresholds are drawn between bins' smallest values, so
  // finer bins bring its draws nearer scikit-learn's: California XT (no bootstrap, random_state
  // 0-19) R2 0.807668 at 4095 against 0.807182 at 1023 (scikit-learn 0.807700), and its
  // histogram-free splits cost no more with more bins. Classification keeps 1023 (Adult XT:
  // exact bins scored 0.0007 AUC lower than 1023).
  if (regression) params.max_bin = 4095;
  return params;
}

std::unique_ptr<models::Model> Create(const char* family, bool extra_trees, const std::string& json,
                                      const models::Task& task) {
  ForestParams params = ForestParams::FromJson(json, Defaults(extra_trees, task));
  const bool regression = task.problem_type == ProblemType::kRegression;
  if (regression != (params.criterion == Criterion::kSquaredError)) {
    throw InvalidInput(regression
                           ? "criterion gini/entropy is for classification; this is a regression "
                             "problem: use criterion squared_error"
                           : "criterion squared_error is for regression; this is a classification "
                             "problem: use gini or entropy");
  }
  return std::make_unique<ForestFamilyModel>(family, std::move(params), task);
}

}  // namespace

std::unique_ptr<models::Model> CreateRfModel(const std::string& hyperparameters_json,
                                             const models::Task& task) {
  return Create("RF", false, hyperparameters_json, task);
}

std::unique_ptr<models::Model> CreateXtModel(const std::string& hyperparameters_json,
                                             const models::Task& task) {
  return Create("XT", true, hyperparameters_json, task);
}

std::unique_ptr<models::Model> DeserializeRfModel(std::string_view bytes, const std::string& name,
                                                  const models::Task& task) {
  return std::make_unique<ForestFamilyModel>("RF", ForestModel::Deserialize(bytes, name), task);
}

std::unique_ptr<models::Model> DeserializeXtModel(std::string_view bytes, const std::string& name,
                                                  const models::Task& task) {
  return std::make_unique<ForestFamilyModel>("XT", ForestModel::Deserialize(bytes, name), task);
}

}  // namespace tabforge::forest

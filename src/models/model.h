// The model contract every family implements, and the registry that creates families by their
// AutoGluon keys (GBM, RF, XT, KNN, LR, NN, ...). The predictor, bagging and stacking work only
// through this interface, so a family plugs in with its own folder and one registration line
// (registry.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/timer.h"
#include "core/types.h"
#include "features/feature_matrix.h"

namespace tabforge::models {

// What is being learned: the problem type, the number of classes (1 for regression) and the
// metric the fit optimises (a src/metrics name), which families may use for early stopping.
struct Task {
  ProblemType problem_type = ProblemType::kBinary;
  int num_classes = 2;
  std::string eval_metric = "accuracy";

  // Columns of a prediction: the classes, or 1 for regression.
  int outputs() const { return problem_type == ProblemType::kRegression ? 1 : num_classes; }
};

// What a fit may use: its deadline (it must stop by then, keeping what it has), threads, GPUs
// granted (0: the CPU) and the seed.
struct FitContext {
  Deadline deadline;
  int threads = 0;
  int num_gpus = 0;
  bool gpus_auto = false;            // the GPU was not asked for by name: use it where it pays off
  double gpu_memory_fraction = 0.9;  // of the GPU's free memory, the most the model may take
  std::uint64_t seed = 0;
};

// A fitted model's account of itself.
struct ModelInfo {
  std::string family;       // registry key, e.g. "GBM"
  int iterations = 0;       // boosting rounds (or trees, epochs) kept; 0 when not iterative
  std::string stop_reason;  // why training ended
  double fit_seconds = 0;   // wall time of the fit
  std::string device;       // where it trained: "cpu", "cuda:0 NAME"; "" when not reported
  std::string device_note;  // why a GPU that was granted was not used
};

class Model {
 public:
  virtual ~Model() = default;

  // Trains on `train` (labels: class index 0..K-1, or the target). With a validation set the
  // family may stop early on it. Must return by the context's deadline.
  virtual void Fit(const features::FeatureMatrix& train, std::span<const double> labels,
                   const features::FeatureMatrix* valid, std::span<const double> valid_labels,
                   const FitContext& context) = 0;
  // Row-major num_rows x Task::outputs(): class probabilities (binary: 2 columns) or values.
  virtual std::vector<double> Predict(const features::FeatureMatrix& features,
                                      int threads) const = 0;
  // Versioned, checksummed bytes; the registry's DeserializeModel reads them back.
  virtual std::string Serialize() const = 0;
  virtual ModelInfo Info() const = 0;
  // Whether the model can predict its own training rows without having learned from them
  // (forests: out-of-bag rows; KNN: leave-one-out). k-fold bagging then trains it once on
  // every row and takes these predictions as the out-of-fold ones (AutoGluon's
  // use_child_oof), instead of training one model per fold.
  virtual bool HasOutOfFold() const { return false; }
  // Trains on all of `train` (as Fit, without validation rows) and returns each training row's
  // prediction made without that row, row-major num_rows x Task::outputs(). Only called when
  // HasOutOfFold(); the default throws InternalError.
  virtual std::vector<double> FitOutOfFold(const features::FeatureMatrix& train,
                                           std::span<const double> labels,
                                           const FitContext& context);
  // Called before Fit on each fold model when a model with its own out-of-fold predictions is
  // bagged fold by fold all the same (stacked levels: see ensemble::FitBagged): it may take a
  // 1/folds share of an ensemble of its own, so the bag costs about one model (forests grow
  // ceil(n_estimators / folds) trees each). The default keeps the model as it is.
  virtual void ShareAmongFolds(int /*folds*/) {}
  // An unfitted copy with the same hyperparameters that trains for exactly `iterations`
  // without validation (refit on all data); families that are not iterative ignore it.
  virtual std::unique_ptr<Model> CloneForRefit(int iterations) const = 0;
};

// One registered family.
struct Family {
  std::string_view key;  // AutoGluon's key
  // A model from hyperparameters (a JSON object, in the family's own names) for `task`; throws
  // InvalidInput naming an unknown or out-of-range hyperparameter and the valid ones.
  std::unique_ptr<Model> (*create)(const std::string& hyperparameters_json, const Task& task);
  // A model from Serialize()'s bytes; `name` (a file) appears in errors.
  std::unique_ptr<Model> (*deserialize)(std::string_view bytes, const std::string& name,
                                        const Task& task);
};

// The registered families, in registration order.
const std::vector<Family>& Families();
// Adds a family beside the built-in ones (plug-ins, test doubles); throws InvalidInput when
// its key is taken. Not thread-safe: register before fitting.
void RegisterFamily(const Family& family);
// The family called `key`; throws InvalidInput listing the registered keys when unknown.
const Family& GetFamily(std::string_view key);

}  // namespace tabforge::models

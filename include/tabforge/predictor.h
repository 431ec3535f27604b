// tabforge's public C++ API, under AutoGluon's names:
//
//   tabforge::TabularPredictor predictor("class");
//   predictor.fit(train, {.time_limit = 60});
//   auto labels = predictor.predict(test).labels;
//   auto metrics = predictor.evaluate(test);
//   predictor.save("model/");
//   auto loaded = tabforge::TabularPredictor::load("model/");
//
// Tables come from tabforge::data::ReadCsv (data/csv_reader.h). Errors are tabforge::Error
// subclasses (core/error.h) whose message names the option, column or file and the remedy.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tabforge {

namespace data {
class Table;
}

struct PredictorOptions {
  std::string problem_type;  // "binary", "multiclass", "regression"; empty: inferred
  std::string eval_metric;   // a metric name (see metrics/metric.h); empty: AutoGluon's default
  std::string path;          // where save() writes by default
  int verbosity = 2;         // 0 silent, 1 warnings and the result, 2 one line per model, 3+ more
};

// What fit does; -1 (or empty) means "as the preset says". See presets/*.json.
struct FitOptions {
  const data::Table* tuning_data = nullptr;  // validation rows for holdout fits
  double time_limit = 0;                     // seconds for the whole fit; 0: none
  std::string presets;                       // medium_quality (default), good_quality, ...
  std::string hyperparameters;               // JSON in AutoGluon's shape, or a file holding it
  int num_bag_folds = -1;                    // 0: holdout; >= 2: k-fold bagging
  int num_bag_sets = -1;                     // repeats of the k-fold bagging
  int num_stack_levels = -1;                 // stacked levels above the first (needs bagging)
  double holdout_frac = -1;                  // holdout fraction; -1: AutoGluon's rule by rows
  int refit_full = -1;                       // 1: retrain the best model's members on all rows
  // 1: before a stacked fit, fit the same stack on 8/9 of the rows within a quarter of the time
  // and score it on the other 1/9; when the best stacked model scores higher on its
  // out-of-fold rows than the best unstacked one but no higher on those held-out rows, the
  // stack overfits and the fit goes on without stacking (AutoGluon's dynamic stacking).
  // 0: off.
  int dynamic_stacking = -1;
  int num_cpus = 0;   // threads; 0: all
  int num_gpus = -1;  // GPUs the fit may use; -1 (auto): one when a usable GPU is found,
                      // for the families and data sizes it speeds up
  double gpu_memory_fraction = 0.9;  // of a GPU's free memory, the most one model may take
  std::uint64_t seed = 0;
};

struct LeaderboardRow {
  std::string model;
  std::optional<double> score_test;  // with data only
  std::optional<double> score_val;   // absent for models refit on all rows
  std::string eval_metric;
  std::optional<double> pred_time_test;
  double pred_time_val = 0;
  double fit_time = 0;
  int stack_level = 1;
  bool can_infer = true;
  int fit_order = 0;
  std::string error;  // why the model failed or was skipped (then can_infer is false)
};

// predict(): class labels (classification) or values (regression), in the input's row order.
struct PredictionColumn {
  std::vector<std::string> labels;
  std::vector<double> values;
};

// predict_proba(): row-major rows x classes probabilities, classes in AutoGluon's order.
struct ProbabilityTable {
  std::vector<std::string> classes;
  std::vector<double> values;
};

class TabularPredictor {
 public:
  explicit TabularPredictor(std::string label, PredictorOptions options = {});
  ~TabularPredictor();
  TabularPredictor(TabularPredictor&&) noexcept;
  TabularPredictor& operator=(TabularPredictor&&) noexcept;

  // Trains the portfolio on `train` within options.time_limit and keeps the best model.
  TabularPredictor& fit(const data::Table& train, const FitOptions& options = {});

  // `model` empty: the best model.
  PredictionColumn predict(const data::Table& data, const std::string& model = "") const;
  ProbabilityTable predict_proba(const data::Table& data, const std::string& model = "") const;
  // The eval metric first, then the other metrics of the problem type, on labelled data.
  std::vector<std::pair<std::string, double>> evaluate(const data::Table& data,
                                                       const std::string& model = "") const;
  // Every model, best validation score first; with data also its test score.
  std::vector<LeaderboardRow> leaderboard(const data::Table* data = nullptr) const;
  // Problem, metric, features, models trained and failed, best model, ensemble weights, time.
  std::string fit_summary() const;
  // Retrains the best model's members on all training rows (only in the process that fit).
  TabularPredictor& refit_full();

  // Writes the model directory (atomically: a temporary directory, then rename); "" uses
  // PredictorOptions::path.
  void save(const std::string& path = "") const;
  // Reads a model directory, checking its format version and every file's checksum. The best
  // model and the models it uses are read into memory now; the others (needed only when named
  // in predict, or by leaderboard with data, save and refit_full) when first needed, so the
  // directory should stay in place while the predictor is used.
  static TabularPredictor load(const std::string& path);

  const std::string& label() const;
  std::string problem_type() const;
  const std::string& eval_metric() const;
  const std::vector<std::string>& class_labels() const;
  const std::string& best_model() const;
  // The best model, or the named one, for predictions; throws listing the valid names.
  void set_best_model(const std::string& model);

  struct State;

 private:
  explicit TabularPredictor(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tabforge

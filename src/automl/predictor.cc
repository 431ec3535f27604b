// TabularPredictor: the whole fit (features, portfolio, holdout or k-fold bagging, stacking,
// weighted ensembles, refit), prediction through the chain of models, the leaderboard and the
// model directory.
#include "tabforge/predictor.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "automl/dynamic_stacking.h"
#include "automl/presets.h"
#include "core/context.h"
#include "core/error.h"
#include "core/random.h"
#include "core/serialize.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "core/timer.h"
#include "data/problem_type.h"
#include "data/table.h"
#include "device/cuda_device.h"
#include "device/doctor.h"
#include "ensemble/bagging.h"
#include "ensemble/folds.h"
#include "ensemble/weighted_ensemble.h"
#include "features/pipeline.h"
#include "metrics/metric.h"
#include "tabforge/version.h"

namespace tabforge {
namespace {

// 2: files listed with Checksum64 ("checksum") instead of SHA-256 ("sha256", still read).
constexpr int kSchemaVersion = 2;
constexpr std::string_view kManifestFormat = "tabforge-predictor";
constexpr std::uint64_t kHoldoutStream = 0x686f6c64;  // "hold"
constexpr double kMinModelSeconds = 0.5;      // a model is not started with less time than this
constexpr double kStackingCheckShare = 0.25;  // of the time left, for dynamic stacking's check
constexpr int kAutoBagSets = 20;              // num_bag_sets "auto" with a time limit (AutoGluon's)

// A regression target must be finite; `row` counts data rows of the table the user gave.
void RequireFiniteTarget(const std::string& label, double value, std::int64_t row) {
  if (std::isfinite(value)) return;
  throw InvalidInput(fmt::format(
      "label column '{}' holds {} in data row {}; a regression target must be finite: drop or "
      "impute that row",
      label, value, row + 1));
}

// One entry of the leaderboard: a model (a group of fitted models averaged: the folds of a
// bag, or one) or a weighted ensemble of other entries.
struct Entry {
  std::string name;
  std::string family;  // registry key; empty for a weighted ensemble
  bool ensemble = false;
  int level = 1;
  int fit_order = 0;
  std::string params_json;
  std::vector<std::string> stack_inputs;  // entries whose predictions are extra features
  std::vector<std::string> members;       // ensemble members
  std::vector<double> weights;            // ensemble weights
  // The model (a fold-bagged group or one holdout model). In a loaded predictor a model that the
  // best one does not use is read from `pending_file` when first needed (State::Group).
  mutable ensemble::ModelGroup group;
  mutable std::string pending_file;  // absolute path; empty once read
  std::string pending_checksum;      // Checksum64Hex of the file
  std::optional<double> score_val;
  double fit_time = 0;
  double pred_time_val = 0;
  bool can_infer = true;
  std::string error;
  int iterations = 0;
  int bag_folds = 0;  // fold models in the group (0: holdout model)
  bool refit = false;
  std::vector<double> val_predictions;  // in the fitting process only
};

// AutoGluon's default holdout fraction for `rows` training rows.
double DefaultHoldoutFraction(std::int64_t rows) {
  if (rows < 5000) return std::max(0.1, std::min(0.2, 500.0 / double(rows)));
  return std::max(0.01, std::min(0.1, 2500.0 / double(rows)));
}

// A suffix for temporary directory names, distinct between concurrent saves (portable: no
// process id API).
std::string UniqueSuffix() {
  static std::atomic<std::uint64_t> counter{0};
  return fmt::format("{:x}-{}", std::chrono::steady_clock::now().time_since_epoch().count(),
                     counter.fetch_add(1));
}

std::string FormatScore(std::optional<double> score) {
  return score ? fmt::format("{:.4f}", *score) : std::string("-");
}

namespace fs = std::filesystem;

// The model directory `path` names, checked to be one save() may fill: new, empty, or a
// model directory (which is replaced).
fs::path ModelDirectory(const std::string& path) {
  const fs::path target = fs::absolute(fs::path(path)).lexically_normal();
  std::error_code ec;
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec)) {
      throw InvalidInput(
          fmt::format("{} exists and is not a directory; choose another path", target.string()));
    }
    if (!fs::is_empty(target, ec) && !fs::exists(target / "manifest.json", ec)) {
      throw InvalidInput(fmt::format(
          "{} holds files that are not a tabforge model; choose an empty or new directory",
          target.string()));
    }
  }
  return target;
}

// A new temporary directory (with its models folder) beside `target`, for filling before it
// is renamed into place.
fs::path MakeTemporaryDirectory(const fs::path& target) {
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(parent, ec);
  const fs::path temporary =
      parent / fmt::format(".{}.tmp-{}", target.filename().string(), UniqueSuffix());
  fs::remove_all(temporary, ec);
  if (!fs::create_directories(temporary / "models", ec)) {
    throw IoError(fmt::format("cannot create {}: {}; check the folder's permissions",
                              temporary.string(), ec.message()));
  }
  return temporary;
}

// Writes `bytes` as `relative` under `directory`; returns the manifest's reference to it.
nlohmann::json WriteModelFile(const fs::path& directory, const std::string& relative,
                              const std::string& bytes) {
  WriteFileAtomically((directory / relative).string(), bytes);
  return nlohmann::json{{"file", relative}, {"checksum", Checksum64Hex(bytes)}};
}

std::string EntryFile(const std::string& name) { return "models/" + name + ".bin"; }

// Model files written while fitting, into the temporary directory save() then completes: a
// fit given a path spends its time limit on writing its models too (as AutoGluon saves each
// model when it is trained), and save() has only the manifest left to write.
struct Staging {
  fs::path target;                              // the model directory
  fs::path directory;                           // the temporary one being filled
  std::map<std::string, nlohmann::json> files;  // relative path -> manifest reference
};

// The bytes of model file `file`, checked against its manifest checksum (Checksum64Hex); throws
// InvalidInput naming the file when they differ.
std::string ReadVerifiedModelFile(const std::string& file, const std::string& checksum) {
  std::string bytes = ReadWholeFile(
      file,
      "a loaded predictor reads a model from its directory when the model is first needed: "
      "keep the directory in place");
  if (Checksum64Hex(bytes) != checksum) {
    throw InvalidInput(fmt::format(
        "{} does not match its checksum in the model directory's manifest: the directory is "
        "corrupted or was changed after it was loaded; fit again or restore it from a copy",
        file));
  }
  return bytes;
}

}  // namespace

struct TabularPredictor::State {
  std::string label;
  PredictorOptions options;
  ProblemType problem_type = ProblemType::kBinary;
  std::vector<std::string> classes;
  std::string eval_metric;
  features::FeaturePipeline pipeline;
  std::vector<Entry> entries;
  std::string best;
  bool fitted = false;
  // What the fit did, for the summary and the manifest.
  nlohmann::json fit_record = nlohmann::json::object();
  double fit_seconds = 0;
  // Kept in the fitting process for refit_full.
  features::FeatureMatrix train_x;
  std::vector<double> train_y;
  std::uint64_t seed = 0;
  int threads = 0;
  int gpus = 0;            // GPUs granted to the models (after discovery)
  bool gpus_auto = false;  // not asked for by name
  // Files of the fit in progress, written ahead of save() (see Staging); save() takes them.
  mutable std::optional<Staging> staging;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() { DropStaging(); }

  // Removes files written ahead that no save() took.
  void DropStaging() const {
    if (!staging) return;
    std::error_code ec;
    fs::remove_all(staging->directory, ec);
    staging.reset();
  }
  // Starts writing files ahead for options.path (when set): checks the path now, so that a
  // fit that could not be saved fails before it trains.
  void BeginStaging() {
    DropStaging();
    if (options.path.empty()) return;
    Staging staged;
    staged.target = ModelDirectory(options.path);
    staged.directory = MakeTemporaryDirectory(staged.target);
    staging = std::move(staged);
  }
  // Writes `relative` ahead; a failure is left for save() to meet and report.
  void Stage(const std::string& relative, const std::function<std::string()>& bytes) const {
    if (!staging) return;
    try {
      staging->files[relative] = WriteModelFile(staging->directory, relative, bytes());
    } catch (const IoError& error) {
      Log(2, "{}: not written ahead ({}); save() writes it", relative, error.what());
    }
  }
  void StageEntry(const Entry& entry) const {
    if (entry.ensemble || !entry.can_infer) return;
    Stage(EntryFile(entry.name), [&] { return Group(entry).Serialize(); });
  }

  // Guards the reading of models that a loaded predictor left on disk.
  mutable std::mutex group_mutex;
  // An entry's model, read from its file first where a loaded predictor left it there; throws
  // InvalidInput when the file no longer matches its checksum.
  const ensemble::ModelGroup& Group(const Entry& entry) const {
    const std::lock_guard<std::mutex> lock(group_mutex);
    if (!entry.pending_file.empty()) {
      const std::string bytes = ReadVerifiedModelFile(entry.pending_file, entry.pending_checksum);
      entry.group = ensemble::ModelGroup::Deserialize(bytes, entry.pending_file, task());
      entry.pending_file.clear();
    }
    return entry.group;
  }

  // Model `name` and every model it depends on (ensemble members, stacking inputs), itself
  // included.
  std::set<std::string> ModelsUsedBy(const std::string& name) const {
    std::set<std::string> used;
    std::vector<std::string> stack{name};
    while (!stack.empty()) {
      const std::string next = stack.back();
      stack.pop_back();
      if (!used.insert(next).second) continue;
      const Entry& entry = Get(next);
      for (const std::string& member : entry.members) stack.push_back(member);
      for (const std::string& input : entry.stack_inputs) stack.push_back(input);
    }
    return used;
  }

  models::Task task() const {
    models::Task task;
    task.problem_type = problem_type;
    task.num_classes =
        problem_type == ProblemType::kRegression ? 1 : static_cast<int>(classes.size());
    task.eval_metric = eval_metric;
    return task;
  }
  int outputs() const { return task().outputs(); }

  template <typename... Args>
  void Log(int level, fmt::format_string<Args...> format, Args&&... args) const {
    if (options.verbosity >= level) {
      std::fputs((fmt::format(format, std::forward<Args>(args)...) + "\n").c_str(), stderr);
    }
  }

  Entry* Find(const std::string& name) {
    for (Entry& entry : entries) {
      if (entry.name == name) return &entry;
    }
    return nullptr;
  }
  const Entry& Get(const std::string& name) const {
    std::vector<std::string> names;
    for (const Entry& entry : entries) {
      if (entry.name == name) {
        if (!entry.can_infer) {
          throw InvalidInput(
              fmt::format("model {} cannot predict ({}); choose another of the "
                          "leaderboard's models",
                          name, entry.error));
        }
        return entry;
      }
      if (entry.can_infer) names.push_back(entry.name);
    }
    throw InvalidInput(
        fmt::format("there is no model called '{}'; the models are: {}", name, Join(names, ", ")));
  }

  // Class indices (classification) or values of `table`'s label column.
  std::vector<double> EncodeLabels(const data::Table& table) const {
    const data::Column& column = table.ColumnByName(label);
    std::vector<double> out(static_cast<std::size_t>(table.num_rows()));
    for (std::int64_t row = 0; row < table.num_rows(); ++row) {
      if (column.IsMissing(row)) {
        throw InvalidInput(fmt::format(
            "label column '{}' is missing in data row {}; drop unlabelled rows to evaluate", label,
            row + 1));
      }
      if (problem_type == ProblemType::kRegression) {
        out[row] = column.numeric()[row];
        RequireFiniteTarget(label, out[row], row);
        continue;
      }
      const std::string text = column.CellText(row);
      auto at = std::find(classes.begin(), classes.end(), text);
      if (at == classes.end()) {
        throw InvalidInput(
            fmt::format("label '{}' in data row {} is not one of the classes seen in training ({})",
                        text, row + 1, Join(classes, ", ")));
      }
      out[row] = double(at - classes.begin());
    }
    return out;
  }

  // `base` plus, per input entry, its predictions as numeric features: the positive class's
  // probability for binary problems, every class's for multiclass, the value for regression.
  features::FeatureMatrix WithStackFeatures(
      const features::FeatureMatrix& base, const std::vector<std::string>& inputs,
      const std::vector<const std::vector<double>*>& predictions) const {
    features::FeatureMatrix out = base;
    const int k_outputs = outputs();
    for (std::size_t input = 0; input < inputs.size(); ++input) {
      const std::vector<double>& values = *predictions[input];
      const int first = problem_type == ProblemType::kBinary ? 1 : 0;
      for (int k = first; k < k_outputs; ++k) {
        const std::string name =
            problem_type == ProblemType::kRegression
                ? inputs[input]
                : fmt::format("{}.{}", inputs[input], classes[static_cast<std::size_t>(k)]);
        out.numeric_info.push_back({name, inputs[input], 0, {}});
        for (std::int64_t row = 0; row < base.num_rows; ++row) {
          out.numeric.push_back(static_cast<float>(values[row * k_outputs + k]));
        }
      }
    }
    return out;
  }

  // Predictions of entry `name` on `x` (the pipeline's features), memoised per call.
  const std::vector<double>& PredictEntry(const std::string& name, const features::FeatureMatrix& x,
                                          std::map<std::string, std::vector<double>>& memo) const {
    if (auto at = memo.find(name); at != memo.end()) return at->second;
    const Entry& entry = Get(name);
    std::vector<double> out;
    if (entry.ensemble) {
      std::vector<std::vector<double>> parts;
      for (const std::string& member : entry.members)
        parts.push_back(PredictEntry(member, x, memo));
      std::vector<std::span<const double>> spans(parts.begin(), parts.end());
      out = ensemble::BlendPredictions(spans, entry.weights);
    } else if (entry.stack_inputs.empty()) {
      out = Group(entry).Predict(x, threads);
    } else {
      std::vector<const std::vector<double>*> inputs;
      for (const std::string& input : entry.stack_inputs) {
        inputs.push_back(&PredictEntry(input, x, memo));
      }
      out = Group(entry).Predict(WithStackFeatures(x, entry.stack_inputs, inputs), threads);
    }
    return memo.emplace(name, std::move(out)).first->second;
  }

  std::vector<double> Predict(const data::Table& table, const std::string& model) const {
    if (!fitted) throw InvalidInput("the predictor is not fitted; call fit() or load() first");
    const features::FeatureMatrix x = pipeline.Transform(table, threads);
    std::map<std::string, std::vector<double>> memo;
    return PredictEntry(model.empty() ? best : model, x, memo);
  }

  double Score(std::span<const double> labels, const std::vector<double>& predictions) const {
    return metrics::Score(eval_metric, labels, {predictions, std::max(outputs(), 1)});
  }
};

TabularPredictor::TabularPredictor(std::string label, PredictorOptions options)
    : state_(std::make_unique<State>()) {
  state_->label = std::move(label);
  state_->options = std::move(options);
  if (state_->label.empty()) throw InvalidInput("the label column's name is empty; name it");
}
TabularPredictor::TabularPredictor(std::unique_ptr<State> state) : state_(std::move(state)) {}
TabularPredictor::~TabularPredictor() = default;
TabularPredictor::TabularPredictor(TabularPredictor&&) noexcept = default;
TabularPredictor& TabularPredictor::operator=(TabularPredictor&&) noexcept = default;

const std::string& TabularPredictor::label() const { return state_->label; }
std::string TabularPredictor::problem_type() const {
  return std::string(ProblemTypeName(state_->problem_type));
}
const std::string& TabularPredictor::eval_metric() const { return state_->eval_metric; }
const std::vector<std::string>& TabularPredictor::class_labels() const { return state_->classes; }
const std::string& TabularPredictor::best_model() const { return state_->best; }
void TabularPredictor::set_best_model(const std::string& model) {
  state_->Get(model);
  state_->best = model;
}

TabularPredictor& TabularPredictor::fit(const data::Table& train_table, const FitOptions& options) {
  State& s = *state_;
  Stopwatch total;
  const Deadline deadline = options.time_limit > 0 ? Deadline::In(options.time_limit) : Deadline();
  if (options.time_limit < 0) {
    throw InvalidInput(
        fmt::format("time_limit {}: give seconds > 0, or 0 for no limit", options.time_limit));
  }
  Context context;
  context.num_threads = options.num_cpus;
  s.threads = context.Threads();
  s.seed = options.seed;

  // Strategy: the preset, then the options given.
  const automl::Preset preset =
      automl::GetPreset(options.presets.empty() ? "medium_quality" : options.presets);
  int folds = options.num_bag_folds >= 0 ? options.num_bag_folds : preset.num_bag_folds;
  const int sets_asked = options.num_bag_sets >= 0 ? options.num_bag_sets : preset.num_bag_sets;
  // "auto": repeated bagging while the time limit allows (AutoGluon's default with a limit).
  const int sets = sets_asked >= 0 ? sets_asked : options.time_limit > 0 ? kAutoBagSets : 1;
  int stack_levels =
      options.num_stack_levels >= 0 ? options.num_stack_levels : preset.num_stack_levels;
  const bool refit = options.refit_full >= 0 ? options.refit_full == 1 : preset.refit_full;
  if (folds == 1) {
    throw InvalidInput("num_bag_folds 1: give 0 for a holdout split or at least 2 folds");
  }
  if (folds > 0 && sets < 1)
    throw InvalidInput(fmt::format("num_bag_sets {}: give at least 1", sets));
  if (stack_levels > 0 && folds < 2) {
    throw InvalidInput(fmt::format(
        "num_stack_levels {} needs k-fold bagging (stacked models learn from out-of-fold "
        "predictions); set num_bag_folds to 2 or more (AutoGluon uses 8), or num_stack_levels 0",
        stack_levels));
  }
  if (folds >= 2 && options.tuning_data != nullptr) {
    throw InvalidInput(
        "tuning data is used as the holdout set, which bagged fits do not have; drop the tuning "
        "data or set num_bag_folds to 0");
  }

  // The label, the problem type and the metric.
  std::optional<ProblemType> forced;
  if (!s.options.problem_type.empty()) forced = data::ParseProblemType(s.options.problem_type);
  const data::LabelSummary summary = data::AnalyzeLabel(train_table, s.label, forced);
  s.problem_type = summary.problem_type;
  s.classes = summary.classes;
  s.eval_metric = s.options.eval_metric.empty()
                      ? std::string(metrics::DefaultMetric(s.problem_type))
                      : std::string(metrics::GetMetric(s.options.eval_metric).name);
  if (!metrics::IsValidFor(metrics::GetMetric(s.eval_metric), s.problem_type)) {
    throw InvalidInput(fmt::format("eval_metric {} does not apply to a {} problem; {}",
                                   s.eval_metric, ProblemTypeName(s.problem_type),
                                   s.problem_type == ProblemType::kMulticlass
                                       ? "use e.g. accuracy, log_loss or roc_auc_ovr"
                                       : "use e.g. the default"));
  }
  const models::Task task = s.task();
  const std::vector<automl::ModelConfig> portfolio = automl::ParseHyperparameters(
      options.hyperparameters.empty() ? preset.hyperparameters : options.hyperparameters, task);

  // Rows with a label; the feature pipeline learns from them.
  const data::Column& label_column = train_table.ColumnByName(s.label);
  std::vector<std::int64_t> labelled;
  for (std::int64_t row = 0; row < train_table.num_rows(); ++row) {
    if (label_column.IsMissing(row)) continue;
    labelled.push_back(row);
    // Checked here, where rows are still counted as in the user's table.
    if (s.problem_type == ProblemType::kRegression) {
      RequireFiniteTarget(s.label, label_column.numeric()[row], row);
    }
  }
  const bool all_labelled = static_cast<std::int64_t>(labelled.size()) == train_table.num_rows();
  const data::Table dropped =
      all_labelled ? data::Table() : data::SelectRows(train_table, labelled);
  const data::Table& train = all_labelled ? train_table : dropped;
  s.Log(2, "tabforge {}: fitting a {} problem on {} rows ({} without a label dropped), metric {}",
        TABFORGE_VERSION_STRING, ProblemTypeName(s.problem_type), train.num_rows(),
        train_table.num_rows() - train.num_rows(), s.eval_metric);
  const std::vector<double> y = s.EncodeLabels(train);
  // Every fold holds out at least one row: with fewer rows than folds, as many folds as rows
  // (a label takes two distinct values, so there are at least two rows).
  if (folds >= 2 && train.num_rows() < folds) {
    s.Log(1, "num_bag_folds {}: only {} rows with a label, so {} folds (one row held out each)",
          folds, train.num_rows(), train.num_rows());
    folds = static_cast<int>(train.num_rows());
  }

  // Dynamic stacking: a stacked fit first checks on held-out rows that stacking helps here.
  nlohmann::json stacking_record = nullptr;
  const bool check_stacking =
      stack_levels > 0 &&
      (options.dynamic_stacking >= 0 ? options.dynamic_stacking == 1 : preset.dynamic_stacking);
  if (check_stacking) {
    PredictorOptions resolved = s.options;
    resolved.problem_type = std::string(ProblemTypeName(s.problem_type));
    resolved.eval_metric = s.eval_metric;
    FitOptions stack_options = options;
    stack_options.presets = preset.name;
    stack_options.num_bag_folds = folds;
    stack_options.num_bag_sets = sets;
    stack_options.num_stack_levels = stack_levels;
    s.Log(2, "dynamic stacking: fitting the stack on 8/9 of the rows{} to check it on the rest",
          options.time_limit > 0
              ? fmt::format(" within {:.0f} s", kStackingCheckShare * deadline.SecondsLeft())
              : std::string());
    const automl::StackingCheck check = automl::CheckStacking(
        train, s.label, resolved, stack_options, deadline, kStackingCheckShare, s.seed);
    s.Log(2, "{}", check.note);
    if (check.stacked_overfitting) stack_levels = 0;
    stacking_record = {{"ran", check.ran},
                       {"stacked_overfitting", check.stacked_overfitting},
                       {"holdout_rows", check.holdout_rows},
                       {"seconds", check.seconds},
                       {"note", check.note}};
  }
  // A fit that may use a GPU starts the CUDA runtime while the features are made.
  std::optional<device::CudaWarmUp> warm_up;
  if (options.num_gpus != 0) warm_up.emplace(0);
  features::PipelineOptions pipeline_options;
  pipeline_options.num_threads = s.threads;
  s.BeginStaging();
  s.pipeline = features::FeaturePipeline::Fit(train, s.label, pipeline_options);
  s.Stage("pipeline.bin", [&] { return s.pipeline.Serialize(); });
  features::FeatureMatrix x = s.pipeline.Transform(train, s.threads);
  s.Log(2, "features: {} numeric, {} categorical ({:.1f} s)", x.num_numeric(), x.num_categorical(),
        total.Seconds());
  if (x.num_numeric() == 0 && x.num_categorical() == 0 && x.ngrams.num_columns == 0) {
    std::vector<std::string> reasons;
    for (const features::ColumnDecision& decision : s.pipeline.decisions()) {
      if (decision.column != s.label) {
        reasons.push_back(fmt::format("'{}': {}", decision.column, decision.reason));
      }
    }
    s.Log(1,
          "warning: no feature left to learn from, so every model predicts the label's overall "
          "{}; the columns were dropped ({}); add informative columns",
          s.problem_type == ProblemType::kRegression ? "mean" : "class shares",
          reasons.empty() ? std::string("the table has only the label") : Join(reasons, "; "));
  }
  const bool classification = s.problem_type != ProblemType::kRegression;

  // GPUs: asked for by number, or (-1) found; either way said in one line.
  s.gpus_auto = options.num_gpus < 0;
  if (!(options.gpu_memory_fraction > 0 && options.gpu_memory_fraction <= 1)) {
    throw InvalidInput(fmt::format(
        "gpu_memory_fraction {} is out of range: give a fraction in (0, 1] of the GPU's free "
        "memory (default 0.9)",
        options.gpu_memory_fraction));
  }
  if (options.num_gpus != 0) {
    if (warm_up) warm_up->Wait();
    const device::GpuEnvironment gpu_env = device::DiscoverGpus();
    const device::Diagnosis diagnosis = device::Diagnose(gpu_env);
    if (diagnosis.usable_device >= 0) {
      s.gpus = s.gpus_auto ? 1 : options.num_gpus;
      s.Log(2, "GPU: {} ({}) for the models that use one{}", diagnosis.usable_device,
            gpu_env.devices[diagnosis.usable_device].name,
            s.gpus_auto ? " (--gpus auto: GBM and RF on data of 2M feature cells or more)" : "");
    } else {
      std::string reason = diagnosis.verdict;
      for (const device::CheckResult& check : diagnosis.checks) {
        if (check.status == device::CheckStatus::kError) {
          reason = check.finding;
          break;
        }
      }
      s.Log(s.gpus_auto ? 2 : 1, "GPU: {}no usable GPU ({}); training on the CPU",
            s.gpus_auto ? "" : fmt::format("--gpus {} asked, but ", options.num_gpus), reason);
      s.gpus = 0;
    }
  }

  // Validation: holdout rows (or the tuning data), or the bagging folds.
  features::FeatureMatrix fit_x, valid_x;
  std::vector<double> fit_y, valid_y;
  std::vector<std::vector<std::int32_t>> fold_sets;
  double holdout_frac = 0;
  if (folds >= 2) {
    for (int set = 0; set < sets; ++set) {
      fold_sets.push_back(ensemble::AssignFolds(y, classification, folds, s.seed, set));
    }
  } else if (options.tuning_data != nullptr) {
    fit_x = x;
    fit_y = y;
    try {
      valid_x = s.pipeline.Transform(*options.tuning_data, s.threads);
      valid_y = s.EncodeLabels(*options.tuning_data);
    } catch (const InvalidInput& error) {
      throw InvalidInput(fmt::format("tuning data: {}", error.what()));
    }
  } else {
    holdout_frac =
        options.holdout_frac > 0 ? options.holdout_frac : DefaultHoldoutFraction(x.num_rows);
    if (!(holdout_frac > 0 && holdout_frac < 1)) {
      throw InvalidInput(fmt::format("holdout_frac {}: give a fraction in (0, 1)", holdout_frac));
    }
    // Stratified for classification: each class gives its share of rows, chosen at random.
    const std::vector<double> one_stratum(classification ? 0 : y.size(), 0.0);
    const std::vector<std::uint8_t> held = ensemble::HoldOutRows(
        classification ? std::span<const double>(y) : std::span<const double>(one_stratum),
        holdout_frac, s.seed, kHoldoutStream);
    std::vector<std::int64_t> fit_rows, valid_rows;
    for (std::int64_t row = 0; row < x.num_rows; ++row) {
      (held[row] ? valid_rows : fit_rows).push_back(row);
    }
    if (valid_rows.empty() || fit_rows.empty()) {
      throw InvalidInput(fmt::format(
          "{} labelled rows are too few for a holdout split of {}; add rows or use bagging",
          x.num_rows, holdout_frac));
    }
    fit_x = features::SelectRows(x, fit_rows);
    valid_x = features::SelectRows(x, valid_rows);
    for (std::int64_t row : fit_rows) fit_y.push_back(y[row]);
    for (std::int64_t row : valid_rows) valid_y.push_back(y[row]);
  }
  const bool bagged = folds >= 2;
  // The labels the validation predictions (out-of-fold or holdout) line up with.
  const std::vector<double>& val_labels = bagged ? y : valid_y;

  // A model's resources and deadline: its configuration's CPUs and GPUs within the fit's.
  auto model_context = [&](const automl::ModelConfig& config, double model_left) {
    models::FitContext fit_context;
    fit_context.deadline = model_left < 1e299 ? Deadline::In(model_left) : Deadline();
    fit_context.threads = config.num_cpus > 0 ? std::min(config.num_cpus, s.threads) : s.threads;
    fit_context.num_gpus = config.num_gpus >= 0 ? config.num_gpus : s.gpus;
    fit_context.gpus_auto = config.num_gpus < 0 && s.gpus_auto;
    fit_context.gpu_memory_fraction = options.gpu_memory_fraction;
    fit_context.seed = s.seed;
    return fit_context;
  };
  s.entries.clear();
  int fit_order = 0;
  std::vector<std::string> previous_level;  // models of the level below (stack inputs)
  const int levels = stack_levels + 1;
  for (int level = 1; level <= levels; ++level) {
    // AutoGluon splits the time left evenly over the levels still to train.
    const double left = deadline.SecondsLeft();
    const Deadline level_deadline =
        left < 1e299 ? Deadline::In(left / double(levels - level + 1)) : Deadline();
    // This level's features: the pipeline's, plus the predictions of the level below.
    std::vector<const std::vector<double>*> inputs;
    for (const std::string& name : previous_level) inputs.push_back(&s.Find(name)->val_predictions);
    const features::FeatureMatrix level_x = previous_level.empty()
                                                ? features::FeatureMatrix()
                                                : s.WithStackFeatures(x, previous_level, inputs);
    const features::FeatureMatrix& train_level = previous_level.empty() ? x : level_x;
    std::vector<std::string> this_level;
    // This level's fold-bagged entries, for the repeated sets: the entry (index into
    // s.entries), its configuration, and whether it still takes sets.
    struct Repeatable {
      std::size_t index;
      const automl::ModelConfig* config;
      bool open = true;
    };
    std::vector<Repeatable> repeatable;
    for (const automl::ModelConfig& config : portfolio) {
      Entry entry;
      entry.family = config.family;
      entry.params_json = config.params_json;
      entry.level = level;
      entry.fit_order = ++fit_order;
      entry.stack_inputs = previous_level;
      entry.name = bagged ? fmt::format("{}_BAG_L{}", config.name, level) : config.name;
      const double model_left = level_deadline.SecondsLeft() * config.max_time_limit_ratio;
      if (model_left < kMinModelSeconds) {
        entry.can_infer = false;
        entry.error = fmt::format(
            "skipped: {:.1f} s left of the time limit's share for level {} ({} level(s) "
            "split the time left evenly), too little to train",
            std::max(model_left, 0.0), level, levels);
        s.Log(2, "{}: {}", entry.name, entry.error);
        s.entries.push_back(std::move(entry));
        continue;
      }
      const models::FitContext fit_context = model_context(config, model_left);
      Stopwatch watch;
      try {
        auto make = [&]() {
          return models::GetFamily(config.family).create(config.params_json, task);
        };
        if (bagged) {
          // Out-of-bag and leave-one-out predictions stand in for folds on the first level
          // only (see FitBagged).
          ensemble::BagResult bag =
              ensemble::FitBagged(make, config.family, train_level, y, {fold_sets[0]}, folds, task,
                                  fit_context, 0, level == 1);
          entry.fit_time = watch.Seconds();
          entry.group = std::move(bag.group);
          entry.val_predictions = std::move(bag.out_of_fold);
          entry.pred_time_val = bag.predict_seconds;
          entry.bag_folds = static_cast<int>(entry.group.members().size());
        } else {
          std::unique_ptr<models::Model> model = make();
          model->Fit(fit_x, fit_y, &valid_x, valid_y, fit_context);
          entry.fit_time = watch.Seconds();
          Stopwatch predict_watch;
          entry.val_predictions = model->Predict(valid_x, s.threads);
          entry.pred_time_val = predict_watch.Seconds();
          std::vector<std::unique_ptr<models::Model>> members;
          members.push_back(std::move(model));
          entry.group = ensemble::ModelGroup(config.family, std::move(members));
        }
        entry.iterations = entry.group.MeanIterations();
        entry.score_val = s.Score(val_labels, entry.val_predictions);
        this_level.push_back(entry.name);
        // Where it trained, when a GPU was in play.
        std::string device;
        if (fit_context.num_gpus > 0 && !entry.group.members().empty()) {
          const models::ModelInfo info = entry.group.members().front()->Info();
          if (!info.device.empty()) {
            device = " | " + info.device +
                     (info.device_note.empty() ? std::string() : " (" + info.device_note + ")");
          }
        }
        s.Log(2, "{}: val {} {:.4f} | fit {:.2f} s | {} iterations | {}{}", entry.name,
              s.eval_metric, *entry.score_val, entry.fit_time, entry.iterations,
              options.time_limit > 0 ? fmt::format("{:.1f} s left", deadline.SecondsLeft())
                                     : std::string("no time limit"),
              device);
      } catch (const std::bad_alloc&) {
        entry.can_infer = false;
        entry.error = "failed: out of memory";
        s.Log(1, "{}: {}", entry.name, entry.error);
      } catch (const Error& error) {
        entry.can_infer = false;
        entry.error = fmt::format("failed: {}", error.what());
        s.Log(1, "{}: {}", entry.name, entry.error);
      }
      entry.fit_time = watch.Seconds();
      s.StageEntry(entry);
      if (bagged && entry.can_infer && entry.bag_folds == folds) {
        repeatable.push_back({s.entries.size(), &config});
      }
      s.entries.push_back(std::move(entry));
    }
    // Repeated bagging (num_bag_sets): each further set refits the level's fold-bagged models
    // on new folds, model by model while the level's time lasts (a model is not started with
    // less time left than its last set took); the sets' out-of-fold predictions are averaged.
    for (int set = 1; set < sets && !repeatable.empty(); ++set) {
      bool any = false;
      for (Repeatable& model : repeatable) {
        if (!model.open) continue;
        Entry& entry = s.entries[model.index];
        const automl::ModelConfig* config = model.config;
        const double per_set = entry.fit_time / set;
        const double model_left = level_deadline.SecondsLeft() * config->max_time_limit_ratio;
        if (model_left < std::max(per_set, kMinModelSeconds)) {
          model.open = false;  // sets stay whole: one it missed ends its repeats
          continue;
        }
        const models::FitContext fit_context = model_context(*config, model_left);
        Stopwatch watch;
        try {
          auto make = [&]() {
            return models::GetFamily(config->family).create(config->params_json, task);
          };
          ensemble::BagResult bag =
              ensemble::FitBagged(make, config->family, train_level, y, {fold_sets[set]}, folds,
                                  task, fit_context, set, level == 1);
          for (std::size_t i = 0; i < entry.val_predictions.size(); ++i) {
            entry.val_predictions[i] =
                (entry.val_predictions[i] * set + bag.out_of_fold[i]) / double(set + 1);
          }
          entry.group.Absorb(std::move(bag.group));
          entry.bag_folds = static_cast<int>(entry.group.members().size());
          entry.fit_time += watch.Seconds();
          entry.pred_time_val += bag.predict_seconds;
          entry.iterations = entry.group.MeanIterations();
          entry.score_val = s.Score(val_labels, entry.val_predictions);
          s.Log(2, "{}: bag set {} | val {} {:.4f} | fit {:.2f} s | {}", entry.name, set + 1,
                s.eval_metric, *entry.score_val, watch.Seconds(),
                options.time_limit > 0 ? fmt::format("{:.1f} s left", deadline.SecondsLeft())
                                       : std::string("no time limit"));
          s.StageEntry(entry);
          any = true;
        } catch (const Error& error) {
          // The sets it has stay; it gets no more.
          s.Log(1, "{}: bag set {} failed ({}); keeping its {} sets", entry.name, set + 1,
                error.what(), set);
          model.open = false;
        }
      }
      if (!any) break;
    }
    if (this_level.empty()) {
      if (level == 1) {
        std::string reasons;
        bool out_of_time = false;
        for (const Entry& entry : s.entries) {
          reasons += fmt::format("\n  {}: {}", entry.name, entry.error);
          out_of_time = out_of_time || entry.error.starts_with("skipped:");
        }
        throw InvalidInput(fmt::format(
            "no model could be trained:{}{}", reasons,
            out_of_time ? "\n(models were skipped for time: raise the time limit)" : ""));
      }
      break;
    }
    // The weighted ensemble of this level's models.
    Stopwatch watch;
    Entry ensemble_entry;
    ensemble_entry.name = fmt::format("{}_L{}", automl::kEnsemblePrefix, level + 1);
    ensemble_entry.ensemble = true;
    ensemble_entry.level = level + 1;
    ensemble_entry.fit_order = ++fit_order;
    std::vector<std::span<const double>> member_predictions;
    for (const std::string& name : this_level) {
      member_predictions.push_back(s.Find(name)->val_predictions);
    }
    const ensemble::EnsembleWeights weights =
        ensemble::SelectEnsemble(member_predictions, s.outputs(), val_labels, s.eval_metric);
    double pred_time = 0;
    for (std::size_t m = 0; m < this_level.size(); ++m) {
      if (weights.weights[m] == 0) continue;
      ensemble_entry.members.push_back(this_level[m]);
      ensemble_entry.weights.push_back(weights.weights[m]);
      pred_time += s.Find(this_level[m])->pred_time_val;
    }
    ensemble_entry.val_predictions =
        ensemble::BlendPredictions(member_predictions, weights.weights);
    ensemble_entry.score_val = weights.score;
    ensemble_entry.pred_time_val = pred_time;
    ensemble_entry.fit_time = watch.Seconds();
    std::string weight_text;
    for (std::size_t m = 0; m < ensemble_entry.members.size(); ++m) {
      weight_text += fmt::format("{}{} {:.2f}", m ? ", " : "", ensemble_entry.members[m],
                                 ensemble_entry.weights[m]);
    }
    s.Log(2, "{}: val {} {:.4f} | weights {}", ensemble_entry.name, s.eval_metric, weights.score,
          weight_text);
    s.entries.push_back(std::move(ensemble_entry));
    previous_level = this_level;
  }

  // The best model by validation score; ties go to the one fitted first.
  const metrics::MetricInfo& info = metrics::GetMetric(s.eval_metric);
  const Entry* best = nullptr;
  for (const Entry& entry : s.entries) {
    if (!entry.can_infer || !entry.score_val) continue;
    if (best == nullptr || metrics::IsBetter(info, *entry.score_val, *best->score_val))
      best = &entry;
  }
  s.best = best->name;
  s.fitted = true;
  s.train_x = std::move(x);
  s.train_y = y;
  s.fit_record = {{"presets", preset.name},
                  {"time_limit", options.time_limit},
                  {"num_bag_folds", folds},
                  {"num_bag_sets", sets},
                  {"num_bag_sets_auto", sets_asked < 0},
                  {"num_stack_levels", stack_levels},
                  {"dynamic_stacking", stacking_record},
                  {"holdout_frac", holdout_frac},
                  {"tuning_data", options.tuning_data != nullptr},
                  {"refit_full", refit},
                  {"num_cpus", s.threads},
                  {"num_gpus", options.num_gpus},
                  {"gpus_used", s.gpus},
                  {"seed", options.seed},
                  {"train_rows", s.train_x.num_rows},
                  {"hyperparameters", options.hyperparameters.empty() ? preset.hyperparameters
                                                                      : options.hyperparameters}};
  if (refit) {
    if (deadline.SecondsLeft() > kMinModelSeconds) {
      refit_full();
    } else {
      s.Log(1, "refit_full skipped: the time limit is used up");
    }
  }
  s.fit_seconds = total.Seconds();
  s.fit_record["fit_seconds"] = s.fit_seconds;
  s.Log(2, "fit done in {:.1f} s; best model {} (val {} {})", s.fit_seconds, s.best, s.eval_metric,
        FormatScore(s.Find(s.best)->score_val));
  return *this;
}

TabularPredictor& TabularPredictor::refit_full() {
  State& s = *state_;
  if (!s.fitted || s.train_x.num_rows == 0) {
    throw InvalidInput(
        "refit_full needs the training data of this process's fit; fit again with refit_full "
        "(--refit-full or a preset that sets it)");
  }
  const models::Task task = s.task();
  // The best model and everything it depends on, bottom level first.
  const std::set<std::string> needed = s.ModelsUsedBy(s.best);
  auto full_name = [](const std::string& name) { return name + "_FULL"; };
  // Indices, not pointers: the refit entries are appended to s.entries as they are made.
  std::vector<std::size_t> order;
  for (std::size_t index = 0; index < s.entries.size(); ++index) {
    if (needed.count(s.entries[index].name) && !s.entries[index].refit) order.push_back(index);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Entry& first = s.entries[a];
    const Entry& second = s.entries[b];
    return first.level != second.level ? first.level < second.level
                                       : first.fit_order < second.fit_order;
  });
  int fit_order = static_cast<int>(s.entries.size());
  for (const std::size_t index : order) {
    // Read before this iteration's push_back, which may move every entry.
    const Entry* source = &s.entries[index];
    if (s.Find(full_name(source->name)) != nullptr) continue;
    Entry entry;
    entry.name = full_name(source->name);
    entry.family = source->family;
    entry.ensemble = source->ensemble;
    entry.level = source->level;
    entry.fit_order = ++fit_order;
    entry.params_json = source->params_json;
    entry.refit = true;
    for (const std::string& member : source->members) entry.members.push_back(full_name(member));
    entry.weights = source->weights;
    for (const std::string& input : source->stack_inputs)
      entry.stack_inputs.push_back(full_name(input));
    Stopwatch watch;
    if (!source->ensemble) {
      // Stacked models learn from the out-of-fold predictions of their inputs, as when bagged.
      std::vector<const std::vector<double>*> inputs;
      for (const std::string& input : source->stack_inputs) {
        inputs.push_back(&s.Find(input)->val_predictions);
      }
      const features::FeatureMatrix x =
          source->stack_inputs.empty()
              ? features::FeatureMatrix()
              : s.WithStackFeatures(s.train_x, source->stack_inputs, inputs);
      std::unique_ptr<models::Model> model =
          s.Group(*source).members().front()->CloneForRefit(std::max(source->iterations, 1));
      models::FitContext context;
      context.threads = s.threads;
      context.seed = s.seed;
      model->Fit(source->stack_inputs.empty() ? s.train_x : x, s.train_y, nullptr, {}, context);
      entry.iterations = model->Info().iterations;
      std::vector<std::unique_ptr<models::Model>> members;
      members.push_back(std::move(model));
      entry.group = ensemble::ModelGroup(source->family, std::move(members));
    }
    entry.fit_time = watch.Seconds();
    s.Log(2, "{}: refit on all {} rows | fit {:.2f} s", entry.name, s.train_x.num_rows,
          entry.fit_time);
    s.StageEntry(entry);
    s.entries.push_back(std::move(entry));
  }
  s.best = full_name(s.best);
  return *this;
}

PredictionColumn TabularPredictor::predict(const data::Table& data,
                                           const std::string& model) const {
  const State& s = *state_;
  const std::vector<double> values = s.Predict(data, model);
  PredictionColumn out;
  if (s.problem_type == ProblemType::kRegression) {
    out.values = values;
    return out;
  }
  const int classes = s.outputs();
  const std::int64_t rows = static_cast<std::int64_t>(values.size()) / classes;
  out.labels.reserve(static_cast<std::size_t>(rows));
  for (std::int64_t row = 0; row < rows; ++row) {
    const double* p = values.data() + row * classes;
    out.labels.push_back(s.classes[static_cast<std::size_t>(std::max_element(p, p + classes) - p)]);
  }
  return out;
}

ProbabilityTable TabularPredictor::predict_proba(const data::Table& data,
                                                 const std::string& model) const {
  const State& s = *state_;
  if (s.problem_type == ProblemType::kRegression) {
    throw InvalidInput(
        "predict_proba applies to classification; this predictor does regression "
        "(use predict)");
  }
  ProbabilityTable out;
  out.classes = s.classes;
  out.values = s.Predict(data, model);
  return out;
}

namespace {

std::vector<std::string> ProblemMetrics(ProblemType type) {
  switch (type) {
    case ProblemType::kBinary:
      return {"accuracy", "balanced_accuracy", "mcc",    "roc_auc",
              "f1",       "precision",         "recall", "log_loss"};
    case ProblemType::kMulticlass:
      return {"accuracy", "balanced_accuracy", "mcc", "log_loss"};
    case ProblemType::kRegression:
      return {
          "root_mean_squared_error", "mean_squared_error", "mean_absolute_error", "r2", "pearsonr",
          "median_absolute_error"};
  }
  return {};
}

}  // namespace

std::vector<std::pair<std::string, double>> TabularPredictor::evaluate(
    const data::Table& data, const std::string& model) const {
  const State& s = *state_;
  const std::vector<double> labels = s.EncodeLabels(data);
  const std::vector<double> predictions = s.Predict(data, model);
  std::vector<std::pair<std::string, double>> out;
  std::vector<std::string> names{s.eval_metric};
  for (const std::string& name : ProblemMetrics(s.problem_type)) {
    if (name != s.eval_metric) names.push_back(name);
  }
  for (const std::string& name : names) {
    try {
      out.push_back({name, metrics::Score(name, labels, {predictions, std::max(s.outputs(), 1)})});
    } catch (const InvalidInput&) {
      // Undefined on these rows (e.g. roc_auc with one class present): left out.
    }
  }
  return out;
}

std::vector<LeaderboardRow> TabularPredictor::leaderboard(const data::Table* data) const {
  const State& s = *state_;
  std::vector<LeaderboardRow> rows;
  features::FeatureMatrix x;
  std::vector<double> labels;
  if (data != nullptr) {
    x = s.pipeline.Transform(*data, s.threads);
    labels = s.EncodeLabels(*data);
  }
  // One memo for every model: each model's call times only its own work (its inputs are
  // predicted before it), the marginal time; its pred_time_test is that plus the marginal
  // times of everything it depends on, each counted once.
  std::map<std::string, std::vector<double>> memo;
  std::map<std::string, double> marginal;
  auto total_seconds = [&](const Entry& top) {
    std::set<std::string> seen;
    std::vector<std::string> pending{top.name};
    double seconds = 0;
    while (!pending.empty()) {
      const std::string name = pending.back();
      pending.pop_back();
      if (!seen.insert(name).second) continue;
      seconds += marginal[name];
      const Entry& entry = s.Get(name);
      for (const std::string& member : entry.members) pending.push_back(member);
      for (const std::string& input : entry.stack_inputs) pending.push_back(input);
    }
    return seconds;
  };
  // Predictions level by level, so every model's inputs are in the memo before it.
  std::map<std::string, double> test_scores;
  if (data != nullptr) {
    std::vector<const Entry*> order;
    for (const Entry& entry : s.entries) {
      if (entry.can_infer) order.push_back(&entry);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const Entry* a, const Entry* b) { return a->level < b->level; });
    for (const Entry* entry : order) {
      Stopwatch watch;
      const std::vector<double>& predictions = s.PredictEntry(entry->name, x, memo);
      marginal[entry->name] = watch.Seconds();
      test_scores[entry->name] = s.Score(labels, predictions);
    }
  }
  for (const Entry& entry : s.entries) {
    LeaderboardRow row;
    row.model = entry.name;
    row.score_val = entry.score_val;
    row.eval_metric = s.eval_metric;
    row.pred_time_val = entry.pred_time_val;
    row.fit_time = entry.fit_time;
    row.stack_level = entry.level;
    row.can_infer = entry.can_infer;
    row.fit_order = entry.fit_order;
    row.error = entry.error;
    if (data != nullptr && entry.can_infer) {
      row.pred_time_test = total_seconds(entry);
      row.score_test = test_scores.at(entry.name);
    }
    rows.push_back(std::move(row));
  }
  const metrics::MetricInfo& info = metrics::GetMetric(s.eval_metric);
  std::stable_sort(rows.begin(), rows.end(), [&](const LeaderboardRow& a, const LeaderboardRow& b) {
    const std::optional<double>& sa = data != nullptr ? a.score_test : a.score_val;
    const std::optional<double>& sb = data != nullptr ? b.score_test : b.score_val;
    if (sa.has_value() != sb.has_value()) return sa.has_value();
    if (!sa) return a.fit_order < b.fit_order;
    if (*sa != *sb) return metrics::IsBetter(info, *sa, *sb);
    return a.fit_order < b.fit_order;
  });
  return rows;
}

std::string TabularPredictor::fit_summary() const {
  const State& s = *state_;
  std::string out;
  out += fmt::format("tabforge fit summary\n");
  out += fmt::format("  label:          {}\n", s.label);
  out += fmt::format("  problem type:   {}{}\n", ProblemTypeName(s.problem_type),
                     s.classes.empty() ? "" : fmt::format(" (classes: {})", Join(s.classes, ", ")));
  out += fmt::format("  eval metric:    {}\n", s.eval_metric);
  int numeric = 0, dropped = 0;
  std::vector<std::string> used;
  for (const features::ColumnDecision& decision : s.pipeline.decisions()) {
    if (decision.kept) {
      used.push_back(decision.column);
      numeric += static_cast<int>(decision.outputs.size());
    } else if (decision.column != s.label) {
      ++dropped;
    }
  }
  out += fmt::format("  features:       {} columns used ({} features), {} dropped\n", used.size(),
                     numeric, dropped);
  if (s.fit_record.contains("presets")) {
    out += fmt::format(
        "  strategy:       preset {}, {} bag folds x {}{} sets, {} stack levels{}\n",
        s.fit_record["presets"].get<std::string>(), s.fit_record["num_bag_folds"].get<int>(),
        s.fit_record.value("num_bag_sets_auto", false) ? "up to " : "",
        s.fit_record["num_bag_sets"].get<int>(), s.fit_record["num_stack_levels"].get<int>(),
        s.fit_record["num_bag_folds"].get<int>() == 0
            ? fmt::format(", holdout {:.3f}", s.fit_record["holdout_frac"].get<double>())
            : std::string());
    const nlohmann::json stacking = s.fit_record.value("dynamic_stacking", nlohmann::json());
    if (stacking.is_object()) {
      out += fmt::format("  dynamic stacking: {}\n", stacking.value("note", std::string()));
    }
  }
  int trained = 0;
  std::string failed;
  for (const Entry& entry : s.entries) {
    if (entry.can_infer) {
      ++trained;
    } else {
      failed += fmt::format("    {}: {}\n", entry.name, entry.error);
    }
  }
  out += fmt::format("  models:         {} trained, {} failed or skipped\n", trained,
                     s.entries.size() - trained);
  out += failed;
  out += fmt::format("  best model:     {} (val {} {})\n", s.best, s.eval_metric,
                     FormatScore(s.Get(s.best).score_val));
  for (const Entry& entry : s.entries) {
    if (!entry.ensemble || !entry.can_infer) continue;
    std::string weights;
    for (std::size_t m = 0; m < entry.members.size(); ++m) {
      weights += fmt::format("{}{} {:.2f}", m ? ", " : "", entry.members[m], entry.weights[m]);
    }
    out += fmt::format("  {}: {}\n", entry.name, weights);
  }
  out += fmt::format("  fit time:       {:.1f} s\n", s.fit_seconds);
  return out;
}

void TabularPredictor::save(const std::string& path_given) const {
  const State& s = *state_;
  if (!s.fitted) throw InvalidInput("the predictor is not fitted; nothing to save");
  const std::string path = path_given.empty() ? s.options.path : path_given;
  if (path.empty()) throw InvalidInput("no model directory given; pass a path (-o DIR)");
  const fs::path target = ModelDirectory(path);
  // The files the fit wrote ahead for this directory are taken as they are.
  std::map<std::string, nlohmann::json> staged;
  fs::path temporary;
  std::error_code ec;
  if (s.staging && s.staging->target == target && fs::is_directory(s.staging->directory, ec)) {
    temporary = s.staging->directory;
    staged = s.staging->files;
  } else {
    temporary = MakeTemporaryDirectory(target);
  }
  const fs::path parent = temporary.parent_path();
  const std::string suffix = UniqueSuffix();
  auto write = [&](const std::string& relative, const std::function<std::string()>& bytes) {
    if (auto at = staged.find(relative); at != staged.end()) return at->second;
    return WriteModelFile(temporary, relative, bytes());
  };
  nlohmann::json manifest;
  manifest["format"] = kManifestFormat;
  manifest["schema_version"] = kSchemaVersion;
  manifest["tabforge_version"] = TABFORGE_VERSION_STRING;
  manifest["label"] = s.label;
  manifest["problem_type"] = ProblemTypeName(s.problem_type);
  manifest["eval_metric"] = s.eval_metric;
  manifest["classes"] = s.classes;
  manifest["pipeline"] = write("pipeline.bin", [&] { return s.pipeline.Serialize(); });
  manifest["best_model"] = s.best;
  manifest["fit"] = s.fit_record;
  manifest["models"] = nlohmann::json::array();
  for (const Entry& entry : s.entries) {
    nlohmann::json item{{"name", entry.name},
                        {"kind", entry.ensemble ? "ensemble" : "model"},
                        {"family", entry.family},
                        {"level", entry.level},
                        {"fit_order", entry.fit_order},
                        {"params", entry.params_json},
                        {"fit_time", entry.fit_time},
                        {"pred_time_val", entry.pred_time_val},
                        {"can_infer", entry.can_infer},
                        {"error", entry.error},
                        {"iterations", entry.iterations},
                        {"bag_folds", entry.bag_folds},
                        {"refit", entry.refit},
                        {"stack_inputs", entry.stack_inputs},
                        {"members", entry.members},
                        {"weights", entry.weights}};
    item["score_val"] = entry.score_val ? nlohmann::json(*entry.score_val) : nlohmann::json();
    if (!entry.ensemble && entry.can_infer) {
      item["data"] = write(EntryFile(entry.name), [&] { return s.Group(entry).Serialize(); });
    }
    manifest["models"].push_back(std::move(item));
  }
  WriteFileAtomically((temporary / "manifest.json").string(), manifest.dump(2) + "\n");
  // Swap the finished directory in; an older model there is replaced only once this one is
  // complete.
  const fs::path old = parent / fmt::format(".{}.old-{}", target.filename().string(), suffix);
  fs::remove_all(old, ec);
  const bool replacing = fs::exists(target, ec);
  if (replacing) fs::rename(target, old, ec);
  // The files written ahead are used up either way.
  const bool took_staging = s.staging && s.staging->directory == temporary;
  if (took_staging) s.staging.reset();
  if (ec) {
    const std::string message = ec.message();
    fs::remove_all(temporary, ec);
    throw IoError(fmt::format("cannot replace {}: {}", target.string(), message));
  }
  fs::rename(temporary, target, ec);
  if (ec) {
    const std::string message = ec.message();
    fs::remove_all(temporary, ec);
    if (replacing) fs::rename(old, target, ec);
    throw IoError(fmt::format("cannot write {}: {}", target.string(), message));
  }
  if (replacing) fs::remove_all(old, ec);
}

TabularPredictor TabularPredictor::load(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path root(path);
  const fs::path manifest_path = root / "manifest.json";
  auto read = [&](const fs::path& file) {
    return ReadWholeFile(
        file.string(),
        fmt::format("is {} a tabforge model directory (made by `tabforge fit -o DIR`)?", path));
  };
  const std::string text = read(manifest_path);
  const nlohmann::json manifest = nlohmann::json::parse(text, nullptr, false);
  auto corrupted = [&](const std::string& what) {
    return InvalidInput(
        fmt::format("{}: the model directory is corrupted ({}); fit again or "
                    "restore it from a copy",
                    manifest_path.string(), what));
  };
  if (manifest.is_discarded() || !manifest.is_object()) throw corrupted("manifest is not JSON");
  if (manifest.value("format", "") != kManifestFormat) {
    throw InvalidInput(fmt::format("{} is not a tabforge model manifest", manifest_path.string()));
  }
  const int schema = manifest.value("schema_version", 0);
  if (schema > kSchemaVersion) {
    throw InvalidInput(fmt::format(
        "{} was written by tabforge {} (model format {}); this tabforge ({}) reads format {}: "
        "upgrade tabforge to load it",
        path, manifest.value("tabforge_version", "?"), schema, TABFORGE_VERSION_STRING,
        kSchemaVersion));
  }
  auto state = std::make_unique<State>();
  try {
    auto load_file = [&](const nlohmann::json& ref) {
      const std::string relative = ref.at("file").get<std::string>();
      std::string bytes = read(root / relative);
      const bool matches = ref.contains("checksum")
                               ? Checksum64Hex(bytes) == ref.at("checksum").get<std::string>()
                               : Sha256Hex(bytes) == ref.at("sha256").get<std::string>();
      if (!matches) {
        throw corrupted(fmt::format("{} does not match its checksum", relative));
      }
      return std::make_pair(std::move(bytes), (root / relative).string());
    };
    state->label = manifest.at("label").get<std::string>();
    state->problem_type = data::ParseProblemType(manifest.at("problem_type").get<std::string>());
    state->eval_metric = manifest.at("eval_metric").get<std::string>();
    state->classes = manifest.at("classes").get<std::vector<std::string>>();
    state->fit_record = manifest.at("fit");
    state->fit_seconds = state->fit_record.value("fit_seconds", 0.0);
    {
      const auto [bytes, name] = load_file(manifest.at("pipeline"));
      state->pipeline = features::FeaturePipeline::Deserialize(bytes, name);
    }
    const models::Task task = state->task();
    for (const nlohmann::json& item : manifest.at("models")) {
      Entry entry;
      entry.name = item.at("name").get<std::string>();
      entry.ensemble = item.at("kind").get<std::string>() == "ensemble";
      entry.family = item.at("family").get<std::string>();
      entry.level = item.at("level").get<int>();
      entry.fit_order = item.at("fit_order").get<int>();
      entry.params_json = item.at("params").get<std::string>();
      entry.fit_time = item.at("fit_time").get<double>();
      entry.pred_time_val = item.at("pred_time_val").get<double>();
      entry.can_infer = item.at("can_infer").get<bool>();
      entry.error = item.at("error").get<std::string>();
      entry.iterations = item.at("iterations").get<int>();
      entry.bag_folds = item.at("bag_folds").get<int>();
      entry.refit = item.at("refit").get<bool>();
      entry.stack_inputs = item.at("stack_inputs").get<std::vector<std::string>>();
      entry.members = item.at("members").get<std::vector<std::string>>();
      entry.weights = item.at("weights").get<std::vector<double>>();
      if (!item.at("score_val").is_null()) entry.score_val = item.at("score_val").get<double>();
      state->entries.push_back(std::move(entry));
    }
    state->best = manifest.at("best_model").get<std::string>();
    // The best model and the models it uses are read now; the others when first needed. Every
    // file's checksum is checked now (theirs a megabyte at a time).
    const std::set<std::string> needed = state->ModelsUsedBy(state->best);
    const nlohmann::json& items = manifest.at("models");
    for (std::size_t index = 0; index < items.size(); ++index) {
      if (!items[index].contains("data")) continue;
      const nlohmann::json& ref = items[index].at("data");
      Entry& entry = state->entries[index];
      if (needed.count(entry.name) || !ref.contains("checksum")) {
        const auto [bytes, name] = load_file(ref);
        entry.group = ensemble::ModelGroup::Deserialize(bytes, name, task);
        continue;
      }
      const std::string relative = ref.at("file").get<std::string>();
      entry.pending_file = (root / relative).string();
      entry.pending_checksum = ref.at("checksum").get<std::string>();
      if (FileChecksum64Hex(entry.pending_file,
                            fmt::format("is {} a complete tabforge model directory?", path)) !=
          entry.pending_checksum) {
        throw corrupted(fmt::format("{} does not match its checksum", relative));
      }
    }
  } catch (const nlohmann::json::exception& error) {
    throw corrupted(fmt::format("manifest field missing or of the wrong type: {}", error.what()));
  }
  state->fitted = true;
  state->options.path = path;
  return TabularPredictor(std::move(state));
}

}  // namespace tabforge

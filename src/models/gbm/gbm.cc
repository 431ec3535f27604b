#include "models/gbm/gbm.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/context.h"
#include "core/error.h"
#include "core/random.h"
#include "core/serialize.h"
#include "data/source.h"
#include "metrics/metric.h"
#include "models/gbm/gbm_rounds.h"
#include "models/tree/grower.h"
#include "models/tree/row_groups.h"

namespace tabforge::gbm {
namespace {

constexpr std::uint64_t kTreeFeatureStream = 0x74726565;  // "tree"
// The default |leaf output| cap of multiclass objectives (see GbmParams::max_delta_step).
constexpr double kMulticlassDeltaCap = 10;

double Sigmoid(double score) { return 1.0 / (1.0 + std::exp(-score)); }

// Probabilities (or values) from raw scores, row-major num_rows x num_outputs, into `out`
// (num_rows x 2 for binary).
void ToPredictions(const std::string& objective, int outputs, const std::vector<double>& raw,
                   std::vector<double>& out) {
  const std::size_t rows = raw.size() / static_cast<std::size_t>(outputs);
  if (IsRegressionObjective(objective)) {
    out = raw;
    return;
  }
  if (objective == "binary") {
    out.resize(rows * 2);
    for (std::size_t row = 0; row < rows; ++row) {
      const double positive = Sigmoid(raw[row]);
      out[2 * row] = 1 - positive;
      out[2 * row + 1] = positive;
    }
    return;
  }
  out.resize(raw.size());
  for (std::size_t row = 0; row < rows; ++row) {
    const double* scores = raw.data() + row * outputs;
    const double largest = *std::max_element(scores, scores + outputs);
    double total = 0;
    for (int k = 0; k < outputs; ++k) total += std::exp(scores[k] - largest);
    for (int k = 0; k < outputs; ++k)
      out[row * outputs + k] = std::exp(scores[k] - largest) / total;
  }
}

}  // namespace

double WeightedQuantile(std::vector<std::pair<double, double>>& values, double quantile) {
  std::sort(values.begin(), values.end());
  double total = 0;
  for (const auto& [value, weight] : values) total += weight;
  double cumulative = 0;
  for (const auto& [value, weight] : values) {
    cumulative += weight;
    if (cumulative >= quantile * total) return value;
  }
  return values.empty() ? 0.0 : values.back().first;
}

double RenewalQuantile(const GbmParams& params) {
  if (params.objective == "regression_l1") return 0.5;
  if (params.objective == "quantile") return params.alpha;
  return -1;
}

namespace {

// The CPU's rounds: gradients in parallel over rows, trees from the shared grower, scores
// updated from the grower's row groups.
class CpuRoundTrainer final : public RoundTrainer {
 public:
  explicit CpuRoundTrainer(const RoundSetup& setup)
      : setup_(setup),
        params_(*setup.params),
        rows_(setup.bins->num_rows),
        outputs_(setup.outputs),
        grower_(*setup.bins, *setup.mapper, setup.grower, setup.threads),
        scores_(static_cast<std::size_t>(rows_ * outputs_)),
        gradients_(static_cast<std::size_t>(rows_ * outputs_)),
        pairs_(static_cast<std::size_t>(rows_)),
        hessians_(outputs_ > 1 ? gradients_.size() : 0),
        in_bag_(setup.bagging ? static_cast<std::size_t>(rows_) : 0, 1) {
    // Training scores are floats (as XGBoost keeps its prediction cache): each update rounds
    // once, score + leaf value in double, so 4 bytes per row and output suffice. They are
    // output-major (output k's are [k * rows, (k + 1) * rows)), so a tree's update walks one
    // output's block instead of a stride through every row's outputs.
    for (int k = 0; k < outputs_; ++k) {
      std::fill(scores_.begin() + k * rows_, scores_.begin() + (k + 1) * rows_,
                static_cast<float>(setup_.init_score[k]));
    }
  }

  void TrainRound(int round, std::vector<tree::Tree>& trees) override {
    const int threads = setup_.threads;
    const std::int64_t rows = rows_;
    const int outputs = outputs_;
    const std::span<const double> labels = setup_.labels;
    if (setup_.bagging && round % params_.bagging_freq == 0) {
      bag_.clear();
      for (std::int64_t row = 0; row < rows; ++row) {
        const bool keep = RandomUniform(params_.seed, kBagStream + std::uint64_t(round), row) <
                          params_.bagging_fraction;
        in_bag_[row] = keep;
        if (keep) bag_.push_back(static_cast<std::int32_t>(row));
      }
    }
    // Gradients (output-major: output k's are [k * rows, (k + 1) * rows)) and fixed-point
    // hessians of the objective at the current scores, with the largest |gradient| of each
    // output (single output: found in the same pass). Multiclass keeps every class's fixed
    // hessians for the round; a single output writes them straight into the row pairs.
    double max_gradient = 0;
    const RowGradientParams& objective = setup_.objective;
#pragma omp parallel num_threads(threads) if (rows >= kParallelRows)
    {
      std::vector<double> exps(static_cast<std::size_t>(outputs));  // softmax numerators
      std::vector<float> row_scores(static_cast<std::size_t>(outputs));
#pragma omp for schedule(static) reduction(max : max_gradient)
      for (std::int64_t row = 0; row < rows; ++row) {
        const double w = setup_.weights.empty() ? 1.0 : setup_.weights[row];
        if (outputs > 1) {
          for (int k = 0; k < outputs; ++k) row_scores[k] = scores_[k * rows + row];
          RowGradients(objective, row_scores.data(), labels[row], w, gradients_.data() + row,
                       hessians_.data() + row, rows, exps.data());
        } else {
          RowGradients(objective, scores_.data() + row, labels[row], w, gradients_.data() + row,
                       &pairs_[row].hessian, rows, nullptr);
          max_gradient = std::max(max_gradient, std::fabs(double(gradients_[row])));
        }
      }
    }
    const std::vector<std::uint8_t> active = SampleTreeFeatures(
        setup_.mapper->num_features(), params_.feature_fraction, params_.seed, round);
    for (int k = 0; k < outputs; ++k) {
      const float* class_gradient = gradients_.data() + k * rows;
      if (outputs > 1) {
        max_gradient = 0;
#pragma omp parallel for num_threads(threads) schedule(static) if (rows >= kParallelRows) \
    reduction(max                                                                         \
              : max_gradient)
        for (std::int64_t row = 0; row < rows; ++row) {
          max_gradient = std::max(max_gradient, std::fabs(double(class_gradient[row])));
        }
      }
      // Quantize the gradients with stochastic rounding keyed by (seed, round and output,
      // row) to integers in [-level, level].
      tree::QuantizedGradients quantized;
      quantized.gradient_scale = max_gradient > 0 ? max_gradient / double(setup_.level) : 1.0;
      quantized.hessian_scale = 1.0 / objective.hessian_fixed;
      const std::uint64_t stream = kQuantizeStream + std::uint64_t(round) * outputs + k;
      const std::uint32_t* class_hessian = hessians_.data() + k * rows;
      const std::uint64_t key = StreamKey(params_.seed, stream);
      const double scale = quantized.gradient_scale;
      const std::int64_t level = setup_.level;
#pragma omp parallel for num_threads(threads) schedule(static) if (rows >= kParallelRows)
      for (std::int64_t row = 0; row < rows; ++row) {
        pairs_[row].gradient = QuantizeScaledGradient(class_gradient[row] / scale, level, key,
                                                      static_cast<std::uint64_t>(row));
        if (outputs > 1) pairs_[row].hessian = class_hessian[row];
      }
      quantized.pairs = pairs_.data();
      quantized.exact_gradients = class_gradient;
      quantized.max_abs_gradient = max_gradient;
      tree::Tree tree = grower_.Grow(setup_.bagging ? &bag_ : nullptr, quantized, active,
                                     params_.seed ^ (std::uint64_t(round) * outputs + k));
      const int num_leaves = tree.num_leaves();
      if (const double quantile = RenewalQuantile(params_); quantile > 0) {
        // L1 and quantile leaves take the (weighted) quantile of their rows' residuals, as
        // LightGBM renews them; Newton steps on a constant hessian would move too little.
        for (int leaf = 0; leaf < num_leaves; ++leaf) {
          std::vector<std::pair<double, double>> residuals;
          for (std::int32_t row : grower_.LeafRows(leaf)) {
            residuals.push_back(
                {labels[row] - scores_[row], setup_.weights.empty() ? 1.0 : setup_.weights[row]});
          }
          if (!residuals.empty()) tree.leaf_values()[leaf] = WeightedQuantile(residuals, quantile);
        }
      }
      for (double& value : tree.leaf_values()) value *= params_.learning_rate;
      const std::vector<double>& leaf_values = tree.leaf_values();
      // Bagged rows take their leaf's value from the grower's row groups; the rest are routed
      // through the tree by their bins.
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (rows >= kParallelRows)
      for (int leaf = 0; leaf < num_leaves; ++leaf) {
        for (std::int32_t row : grower_.LeafRows(leaf)) {
          float& score = scores_[k * rows + row];
          score = AddToScore(score, leaf_values[leaf]);
        }
      }
      if (setup_.bagging) {
#pragma omp parallel for num_threads(threads) schedule(static) if (rows >= kParallelRows)
        for (std::int64_t row = 0; row < rows; ++row) {
          if (!in_bag_[row]) {
            float& score = scores_[k * rows + row];
            score = AddToScore(score, leaf_values[tree.LeafOfBins(*setup_.bins, row)]);
          }
        }
      }
      trees.push_back(std::move(tree));
    }
  }

 private:
  const RoundSetup& setup_;
  const GbmParams& params_;
  std::int64_t rows_;
  int outputs_;
  tree::TreeGrower grower_;
  std::vector<float> scores_;
  std::vector<float> gradients_;  // exact gradients, output-major
  std::vector<tree::GradientPair> pairs_;
  std::vector<std::uint32_t> hessians_;  // multiclass: fixed hessians, output-major
  std::vector<std::int32_t> bag_;        // the round's rows when bagging
  std::vector<std::uint8_t> in_bag_;
};

}  // namespace

std::vector<std::uint8_t> SampleTreeFeatures(int features, double fraction, std::uint64_t seed,
                                             int round) {
  std::vector<std::uint8_t> active(static_cast<std::size_t>(features), 1);
  if (fraction >= 1.0 || features == 0) return active;
  std::vector<std::pair<double, int>> keys;
  for (int feature = 0; feature < features; ++feature) {
    keys.push_back(
        {RandomUniform(seed, kTreeFeatureStream + std::uint64_t(round) * 131, feature), feature});
  }
  std::sort(keys.begin(), keys.end());
  std::fill(active.begin(), active.end(), 0);
  const auto keep = static_cast<std::size_t>(std::max(1.0, std::ceil(fraction * features)));
  for (std::size_t index = 0; index < keep; ++index) active[keys[index].second] = 1;
  return active;
}

std::unique_ptr<RoundTrainer> MakeCpuRoundTrainer(const RoundSetup& setup) {
  const std::string& merge = setup.params->merge_equal_rows;
  if (merge != "never") {
    const std::int64_t rows = setup.bins->num_rows;
    tree::RowGroups groups;
    if (tree::GroupEqualRows(*setup.bins, merge == "always" ? rows : rows / 4 * 3, groups)) {
      return MakeMergedRoundTrainer(setup, std::move(groups));
    }
  }
  return std::make_unique<CpuRoundTrainer>(setup);
}

GbmModel GbmModel::Fit(const features::FeatureMatrix& train, std::span<const double> labels,
                       std::span<const double> weights, const features::FeatureMatrix* valid,
                       std::span<const double> valid_labels, const GbmParams& params, int threads,
                       const Deadline& deadline) {
  params.Validate();
  Context context;
  context.num_threads = threads;
  threads = context.Threads();
  const std::int64_t rows = train.num_rows;
  TFG_CHECK(static_cast<std::int64_t>(labels.size()) == rows, "{} labels for {} rows",
            labels.size(), rows);
  if (rows < 2) throw InvalidInput("GBM needs at least two training rows");
  GbmModel model;
  model.params_ = params;
  const int outputs = params.objective == "multiclass" ? params.num_class : 1;
  model.num_outputs_ = outputs;

  Stopwatch watch;
  tree::BinningOptions binning;
  binning.max_bin = params.max_bin;
  binning.min_data_in_bin = params.min_data_in_bin;
  binning.sample_rows = params.bin_construct_sample_cnt;
  binning.seed = params.seed;
  model.mapper_ = tree::BinMapper::Fit(train, binning, threads);
  tree::BinMatrix bins = tree::ApplyBins(model.mapper_, train, threads);
  model.report_.bin_seconds = watch.Seconds();
  model.report_.bin_matrix_bytes = bins.bins8.size() + 2 * bins.bins16.size();
  watch.Reset();

  // Row weights, with scale_pos_weight on positive rows and class_weight by class.
  const bool classifying = !IsRegressionObjective(params.objective);
  const int class_count = params.objective == "binary" ? 2 : outputs;
  std::vector<double> class_factor(static_cast<std::size_t>(class_count), 1.0);
  if (classifying && params.class_weight == "balanced") {
    // scikit-learn's rule: rows / (class_count * rows of the class).
    std::vector<std::int64_t> counts(class_factor.size(), 0);
    for (std::int64_t row = 0; row < rows; ++row) ++counts[static_cast<std::size_t>(labels[row])];
    for (int k = 0; k < class_count; ++k) {
      if (counts[k] > 0) class_factor[k] = double(rows) / (double(class_count) * double(counts[k]));
    }
  } else if (classifying && !params.class_weights.empty()) {
    if (static_cast<int>(params.class_weights.size()) != class_count) {
      throw InvalidInput(fmt::format(
          "class_weight lists {} weights but the problem has {} classes; give one weight per "
          "class, in class order",
          params.class_weights.size(), class_count));
    }
    class_factor = params.class_weights;
  }
  // Unit weights are left implicit (no vector of rows).
  const bool unit_weights =
      weights.empty() &&
      std::all_of(class_factor.begin(), class_factor.end(), [](double f) { return f == 1.0; }) &&
      (params.objective != "binary" || params.scale_pos_weight == 1.0);
  std::vector<double> weight_storage;
  if (!unit_weights) {
    weight_storage.assign(static_cast<std::size_t>(rows), 1.0);
    for (std::int64_t row = 0; row < rows; ++row) {
      double& w = weight_storage[row];
      if (!weights.empty()) w = weights[row];
      if (!classifying) continue;
      w *= class_factor[static_cast<std::size_t>(labels[row])];
      if (params.objective == "binary" && labels[row] == 1) w *= params.scale_pos_weight;
    }
  }
  const double* const weight_data = weight_storage.data();
  auto weight = [unit_weights, weight_data](std::int64_t row) {
    return unit_weights ? 1.0 : weight_data[row];
  };
  // Initial scores: the label prior (log-odds, log class frequencies) or the weighted mean.
  double total_weight = 0;
  std::vector<double> sums(static_cast<std::size_t>(outputs), 0.0);
  for (std::int64_t row = 0; row < rows; ++row) {
    total_weight += weight(row);
    if (params.objective == "multiclass") {
      sums[static_cast<std::size_t>(labels[row])] += weight(row);
    } else {
      sums[0] += weight(row) * labels[row];
    }
  }
  model.init_score_.assign(static_cast<std::size_t>(outputs), 0.0);
  for (int k = 0; k < outputs; ++k) {
    const double mean = sums[k] / total_weight;
    if (params.objective == "binary") {
      const double p = std::clamp(mean, 1e-15, 1 - 1e-15);
      model.init_score_[k] = std::log(p / (1 - p));
    } else if (params.objective == "multiclass") {
      model.init_score_[k] = std::log(std::max(mean, 1e-15));
    } else {
      model.init_score_[k] = mean;
    }
  }
  if (const double quantile = RenewalQuantile(params); quantile > 0) {
    std::vector<std::pair<double, double>> values;
    for (std::int64_t row = 0; row < rows; ++row) values.push_back({labels[row], weight(row)});
    model.init_score_[0] = WeightedQuantile(values, quantile);
  }

  std::vector<double> valid_scores;
  std::string metric_name = params.metric;
  if (metric_name.empty()) {
    metric_name = params.objective == "regression_l1"       ? "mean_absolute_error"
                  : params.objective == "quantile"          ? "pinball_loss"
                  : IsRegressionObjective(params.objective) ? "root_mean_squared_error"
                                                            : "log_loss";
  }
  const bool validating = valid != nullptr && params.early_stopping_round != 0;
  const metrics::MetricInfo* metric = validating ? &metrics::GetMetric(metric_name) : nullptr;
  if (validating) {
    valid_scores.resize(static_cast<std::size_t>(valid->num_rows * outputs));
    for (std::int64_t row = 0; row < valid->num_rows; ++row) {
      for (int k = 0; k < outputs; ++k) valid_scores[row * outputs + k] = model.init_score_[k];
    }
  }

  RoundSetup setup;
  setup.params = &params;
  setup.bins = &bins;
  setup.mapper = &model.mapper_;
  setup.labels = labels;
  if (!unit_weights) setup.weights = weight_storage;
  setup.init_score = model.init_score_;
  setup.outputs = outputs;
  setup.threads = threads;
  setup.bagging = params.bagging_freq > 0 && params.bagging_fraction < 1.0;
  tree::GrowerParams& grower_params = setup.grower;
  grower_params.num_leaves = params.num_leaves;
  grower_params.max_depth = params.max_depth;
  grower_params.min_data_in_leaf = params.min_data_in_leaf;
  grower_params.min_sum_hessian_in_leaf = params.min_sum_hessian_in_leaf;
  grower_params.min_gain_to_split = params.min_gain_to_split;
  const double max_delta_step =
      params.max_delta_step >= 0 ? params.max_delta_step
                                 : (params.objective == "multiclass" ? kMulticlassDeltaCap : 0.0);
  grower_params.reg = {params.lambda_l1, params.lambda_l2, max_delta_step};
  grower_params.feature_fraction_bynode = params.feature_fraction_bynode;
  grower_params.max_cat_to_onehot = params.max_cat_to_onehot;
  grower_params.max_cat_threshold = params.max_cat_threshold;
  grower_params.cat_smooth = params.cat_smooth;
  grower_params.cat_l2 = params.cat_l2;
  grower_params.min_data_per_group = params.min_data_per_group;
  grower_params.extra_trees = params.extra_trees;
  grower_params.histogram_pool_bytes =
      params.histogram_pool_size > 0
          ? static_cast<std::int64_t>(params.histogram_pool_size * 1048576.0)
          : std::max<std::int64_t>(std::int64_t(3) << 20, model.report_.bin_matrix_bytes / 8);

  // The hessians go straight to fixed point on a scale set by their bound (hessians of these
  // objectives are at most a known multiple of the largest row weight).
  double max_weight = 1;
  if (!unit_weights) max_weight = *std::max_element(weight_storage.begin(), weight_storage.end());
  RowGradientParams& objective = setup.objective;
  objective.kind = params.objective == "binary"          ? ObjectiveKind::kBinary
                   : params.objective == "multiclass"    ? ObjectiveKind::kMulticlass
                   : params.objective == "regression_l1" ? ObjectiveKind::kL1
                   : params.objective == "huber"         ? ObjectiveKind::kHuber
                   : params.objective == "quantile"      ? ObjectiveKind::kQuantile
                                                         : ObjectiveKind::kL2;
  objective.alpha = params.alpha;
  objective.outputs = outputs;
  objective.softmax_factor = outputs > 1 ? double(outputs) / double(outputs - 1) : 1.0;
  const double hessian_bound =
      max_weight * (params.objective == "binary"       ? 0.25
                    : params.objective == "multiclass" ? 0.25 * objective.softmax_factor
                                                       : 1.0);
  objective.hessian_fixed = tree::RowHessianScale(hessian_bound);

  // Gradients are quantized to integers in [-level, level]: num_grad_quant_bins levels, or
  // without quantized training the finest the packed histogram sums hold exactly.
  const std::int64_t finest = tree::MaxGradientLevel(rows);
  setup.level = params.use_quantized_grad ? params.num_grad_quant_bins / 2
                                          : std::min<std::int64_t>(finest, std::int64_t(1) << 20);
  if (setup.level > finest) {
    throw InvalidInput(fmt::format(
        "num_grad_quant_bins {} is too many for {} training rows: gradient sums would overflow "
        "the histogram cells; use at most {}",
        params.num_grad_quant_bins, rows, 2 * finest));
  }

  std::unique_ptr<RoundTrainer> trainer;
  Stopwatch upload_watch;
  if (params.device != "cpu") {
    std::string why;
    trainer = MakeCudaRoundTrainer(setup, why, model.report_.device, model.report_.device_bytes);
    if (trainer == nullptr) {
      model.report_.device = "cpu";
      model.report_.device_note = "CUDA not used: " + why + "; trained on the CPU";
    }
  }
  if (trainer == nullptr) {
    trainer = MakeCpuRoundTrainer(setup);
  } else {
    model.report_.upload_seconds = upload_watch.Seconds();
  }

  double best_score = 0;
  int best_round = 0;
  int rounds_without_gain = 0;
  model.report_.stop_reason = "num_iterations reached";
  for (int round = 0; round < params.num_iterations; ++round) {
    if (deadline.Expired()) {
      model.report_.stop_reason = "deadline";
      break;
    }
    const std::size_t first = model.trees_.size();
    trainer->TrainRound(round, model.trees_);
    if (validating) {
      for (int k = 0; k < outputs; ++k) {
        const tree::Tree& tree = model.trees_[first + k];
        const std::vector<double>& leaf_values = tree.leaf_values();
#pragma omp parallel for num_threads(threads) schedule(static) if (valid->num_rows >= kParallelRows)
        for (std::int64_t row = 0; row < valid->num_rows; ++row) {
          valid_scores[row * outputs + k] +=
              leaf_values[tree.LeafOfRow(*valid, model.mapper_, row)];
        }
      }
    }
    // A round whose trees have a non-finite leaf value (possible only without a leaf cap, when
    // Newton steps divide by vanishing hessians) is dropped; checking leaves, not every score,
    // keeps this off the per-row path.
    const bool finite =
        std::all_of(model.trees_.end() - outputs, model.trees_.end(), [](const tree::Tree& tree) {
          return std::all_of(tree.leaf_values().begin(), tree.leaf_values().end(),
                             [](double value) { return std::isfinite(value); });
        });
    if (!finite) {
      model.trees_.resize(model.trees_.size() - static_cast<std::size_t>(outputs));
      model.report_.stop_reason = "diverged";
      break;
    }
    model.report_.rounds_run = round + 1;
    if (validating) {
      std::vector<double> predictions;
      ToPredictions(params.objective, outputs, valid_scores, predictions);
      const int classes = IsRegressionObjective(params.objective) ? 1
                          : params.objective == "binary"          ? 2
                                                                  : outputs;
      metrics::MetricParams metric_params;
      metric_params.quantile = params.objective == "quantile" ? params.alpha : 0.5;
      const double score =
          metrics::Score(metric_name, valid_labels, {predictions, classes}, {}, metric_params);
      if (round == 0 || metrics::IsBetter(*metric, score, best_score)) {
        best_score = score;
        best_round = round + 1;
        rounds_without_gain = 0;
      } else if (++rounds_without_gain >= (params.early_stopping_round > 0
                                               ? params.early_stopping_round
                                               : 20 + (3 * best_round) / 10)) {
        model.report_.stop_reason = "early stopping";
        break;
      }
    }
  }
  if (validating && best_round > 0) {
    model.trees_.resize(static_cast<std::size_t>(best_round) * outputs);
    model.report_.best_score = best_score;
  }
  model.report_.iterations = static_cast<int>(model.trees_.size()) / outputs;
  model.report_.train_seconds = watch.Seconds() - model.report_.upload_seconds;
  model.report_.device_batches = trainer->DeviceBatches();
  model.report_.device_histogram_bytes = trainer->DeviceHistogramBytes();
  model.report_.device_unused_split_rows = trainer->DeviceUnusedSplitRows();
  // The training state goes before the prediction layout is built, so the two never add up.
  trainer.reset();
  bins = tree::BinMatrix{};
  model.forest_.Build(model.trees_, model.mapper_);
  model.scorer_.Build(model.forest_);
  return model;
}

std::vector<double> GbmModel::PredictRaw(const features::FeatureMatrix& features,
                                         int threads) const {
  Context context;
  context.num_threads = threads;
  const std::int64_t rows = features.num_rows;
  const int outputs = num_outputs_;
  const int trees = forest_.num_trees();
  // A model set to the GPU (device "cuda") scores large batches there, with the same sums as
  // below; small ones, or any the device cannot take (no usable device, too little memory),
  // stay on the CPU.
  if (params_.device != "cpu" && rows * trees >= kDevicePredictWork) {
    std::vector<double> raw;
    std::string why;
    if (DevicePredictRaw(forest_, mapper_, features, outputs, init_score_, params_.gpu_device_id,
                         params_.gpu_memory_fraction, raw, why)) {
      return raw;
    }
  }
  std::vector<double> raw(static_cast<std::size_t>(rows * outputs));
  const std::vector<double>& leaf_values = forest_.leaves();
  const int thread_count = context.Threads();
  constexpr int kGroup = tree::CompactForest::kWalkGroup;
  if (scorer_.usable()) {
    // Trees of at most 128 leaves (MaskScorer): blocks of rows eight at a time with every node
    // of every tree evaluated without branches; a few rows find their leaves feature by
    // feature; then each row adds its trees' values in tree order.
    const std::int64_t block_rows = tree::CompactForest::BlockRows(rows, thread_count);
    const std::int64_t blocks = (rows + block_rows - 1) / block_rows;
    constexpr int kRows = tree::MaskScorer::kGroupRows;
    constexpr int kTreeChunk = 64;  // trees whose tables (at most 3 KB a tree) a block reuses
    // Blocks of fewer rows (a single row, say) take the one-row pass: groups of eight would
    // mostly repeat rows.
    constexpr std::int64_t kFewRows = tree::CompactForest::kWalkGroup;
    const int numeric = scorer_.numeric_count();
    const int categorical = mapper_.num_features() - numeric;
    // A row's raw scores from its trees' leaves, added in tree order.
    auto add_leaves = [&](std::int64_t row, const std::int32_t* row_leaf) {
      double* out = raw.data() + row * outputs;
      for (int k = 0; k < outputs; ++k) out[k] = init_score_[k];
      for (int tree = 0; tree < trees; ++tree) out[tree % outputs] += leaf_values[row_leaf[tree]];
    };
#pragma omp parallel for num_threads(thread_count) schedule(static)
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::int64_t first = block * block_rows;
      const std::int64_t last = std::min(rows, first + block_rows);
      if (last - first < kFewRows) {
        std::vector<std::uint64_t> words(static_cast<std::size_t>(scorer_.row_words()));
        std::vector<std::int32_t> leaf(static_cast<std::size_t>(trees));
        for (std::int64_t row = first; row < last; ++row) {
          scorer_.Leaves(
              mapper_, [&](int feature) { return features.NumericColumn(feature)[row]; },
              [&](int feature) { return features.CategoricalColumn(feature)[row]; }, words.data(),
              leaf.data());
          add_leaves(row, leaf.data());
        }
        continue;
      }
      // The block's rows in groups of eight, their values laid out once; then the trees in
      // chunks whose tables stay in cache while every group of the block passes through them
      // (a model's tables run to megabytes). Each row adds its trees' values in tree order (as
      // add_leaves): chunk after chunk, tree after tree within one.
      const std::int64_t span = last - first;
      const std::int64_t groups = (span + kRows - 1) / kRows;
      const std::int64_t group_values = std::int64_t(numeric) * kRows;
      const std::int64_t group_bins = std::int64_t(categorical) * kRows;
      std::vector<float> values(static_cast<std::size_t>(groups * group_values));
      std::vector<int> bins(static_cast<std::size_t>(groups * group_bins));
      for (std::int64_t group = 0; group < groups; ++group) {
        for (int lane = 0; lane < kRows; ++lane) {
          // A short last group repeats its last row.
          const std::int64_t row = first + std::min<std::int64_t>(group * kRows + lane, span - 1);
          for (int feature = 0; feature < numeric; ++feature) {
            values[group * group_values + feature * kRows + lane] =
                features.NumericColumn(feature)[row];
          }
          for (int feature = 0; feature < categorical; ++feature) {
            bins[group * group_bins + feature * kRows + lane] =
                mapper_.feature(numeric + feature)
                    .CategoryBin(features.CategoricalColumn(feature)[row]);
          }
        }
      }
      std::vector<double> sums(static_cast<std::size_t>(groups * kRows * outputs));
      for (std::int64_t at = 0; at < groups * kRows; ++at) {
        std::copy_n(init_score_.data(), outputs, sums.data() + at * outputs);
      }
      std::vector<std::uint64_t> words(static_cast<std::size_t>(kTreeChunk) * kRows);
      std::vector<std::int32_t> leaf(static_cast<std::size_t>(kTreeChunk) * kRows);
      for (int chunk = 0; chunk < trees; chunk += kTreeChunk) {
        const int chunk_end = std::min(trees, chunk + kTreeChunk);
        for (std::int64_t group = 0; group < groups; ++group) {
          scorer_.GroupLeaves(values.data() + group * group_values,
                              bins.data() + group * group_bins, chunk, chunk_end, words.data(),
                              leaf.data());
          // The group's rows side by side, so that their additions do not wait on one another.
          double* group_sums = sums.data() + group * kRows * outputs;
          for (int tree = chunk; tree < chunk_end; ++tree) {
            const std::int32_t* tree_leaf = leaf.data() + std::int64_t(tree - chunk) * kRows;
            double* into = group_sums + tree % outputs;
            for (int lane = 0; lane < kRows; ++lane) {
              into[lane * outputs] += leaf_values[tree_leaf[lane]];
            }
          }
        }
      }
      std::copy_n(sums.data(), span * outputs, raw.data() + first * outputs);
    }
    return raw;
  }
  // Blocks of rows go tree by tree, so a tree's nodes stay in cache while the block's values
  // of its features (column-major) are read in runs (CompactForest::BlockRows). A block of
  // fewer than kWalkGroup rows (a single row, say) walks groups of trees side by side instead,
  // so that their node loads overlap. Either way a row adds its trees' values in tree order.
  const std::int64_t block_rows = tree::CompactForest::BlockRows(rows, thread_count);
  const std::int64_t blocks = (rows + block_rows - 1) / block_rows;
#pragma omp parallel for num_threads(thread_count) schedule(static)
  for (std::int64_t block = 0; block < blocks; ++block) {
    const std::int64_t first = block * block_rows;
    const std::int64_t last = std::min(rows, first + block_rows);
    for (std::int64_t row = first; row < last; ++row) {
      for (int k = 0; k < outputs; ++k) raw[row * outputs + k] = init_score_[k];
    }
    if (last - first < kGroup) {
      for (std::int64_t row = first; row < last; ++row) {
        for (int tree = 0; tree < trees; tree += kGroup) {
          const int count = std::min(kGroup, trees - tree);
          std::int32_t leaf[kGroup];
          forest_.WalkRowTrees(tree, count, mapper_, features, row, leaf);
          for (int member = 0; member < count; ++member) {
            raw[row * outputs + (tree + member) % outputs] += leaf_values[leaf[member]];
          }
        }
      }
      continue;
    }
    // The block's categorical codes binned once, not at every node that tests them.
    const std::int64_t span = last - first;
    std::vector<int> category_bins;
    forest_.BinCategories(mapper_, features, first, last, category_bins);
    for (int tree = 0; tree < trees; ++tree) {
      const int k = tree % outputs;
      for (std::int64_t row = first; row < last; ++row) {
        raw[row * outputs + k] += leaf_values[forest_.LeafByBin(
            tree, [&](int feature) { return features.NumericColumn(feature)[row]; },
            [&](int feature) { return category_bins[feature * span + (row - first)]; })];
      }
    }
  }
  return raw;
}

bool GbmModel::PredictRawOnDevice(const features::FeatureMatrix& features, std::vector<double>& raw,
                                  std::string& why) const {
  return DevicePredictRaw(forest_, mapper_, features, num_outputs_, init_score_,
                          params_.gpu_device_id, params_.gpu_memory_fraction, raw, why);
}

void GbmModel::PredictRowRaw(const float* numeric, const std::int32_t* categorical,
                             double* out) const {
  for (int k = 0; k < num_outputs_; ++k) out[k] = init_score_[k];
  const int trees = forest_.num_trees();
  constexpr int kGroup = tree::CompactForest::kWalkGroup;
  for (int tree = 0; tree < trees; tree += kGroup) {
    const int count = std::min(kGroup, trees - tree);
    std::int32_t leaf[kGroup];
    forest_.WalkTrees(
        tree, count, mapper_, [&](int feature) { return numeric[feature]; },
        [&](int feature) { return categorical[feature]; }, leaf);
    for (int member = 0; member < count; ++member) {
      out[(tree + member) % num_outputs_] += forest_.leaves()[leaf[member]];
    }
  }
}

std::vector<double> GbmModel::Predict(const features::FeatureMatrix& features, int threads) const {
  std::vector<double> out;
  ToPredictions(params_.objective, num_outputs_, PredictRaw(features, threads), out);
  return out;
}

void GbmModel::FeatureImportance(std::vector<double>& splits, std::vector<double>& gains) const {
  splits.assign(static_cast<std::size_t>(mapper_.num_features()), 0.0);
  gains.assign(splits.size(), 0.0);
  for (const tree::Tree& tree : trees_) tree.AddImportance(splits, gains);
}

namespace {
constexpr std::string_view kModelMagic = "tabforge-gbm";
constexpr std::uint32_t kModelVersion = 1;
}  // namespace

std::string GbmModel::Serialize() const {
  ByteWriter writer = ByteWriter::Framed(kModelMagic, kModelVersion);
  writer.PutString(params_.objective);
  writer.Put<std::int32_t>(num_outputs_);
  writer.PutVector(init_score_);
  mapper_.Write(writer);
  writer.Put<std::uint32_t>(static_cast<std::uint32_t>(trees_.size()));
  for (const tree::Tree& tree : trees_) tree.Write(writer);
  writer.Put<std::int32_t>(report_.iterations);
  writer.PutString(report_.stop_reason);
  return std::move(writer).Frame();
}

GbmModel GbmModel::Deserialize(std::string_view bytes, const std::string& name) {
  ByteReader reader(UnframeBytes(bytes, kModelMagic, kModelVersion, name), name);
  GbmModel model;
  model.params_.objective = reader.GetString();
  model.num_outputs_ = reader.Get<std::int32_t>();
  model.init_score_ = reader.GetVector<double>();
  model.mapper_ = tree::BinMapper::Read(reader);
  const auto count = reader.Get<std::uint32_t>();
  for (std::uint32_t index = 0; index < count; ++index) {
    model.trees_.push_back(tree::Tree::Read(reader, model.mapper_.num_features()));
  }
  model.report_.iterations = reader.Get<std::int32_t>();
  model.report_.stop_reason = reader.GetString();
  const bool known = IsKnownObjective(model.params_.objective);
  if (!known || model.num_outputs_ < 1 ||
      model.init_score_.size() != static_cast<std::size_t>(model.num_outputs_) ||
      model.trees_.size() % static_cast<std::size_t>(model.num_outputs_) != 0 || !reader.AtEnd()) {
    reader.Corrupted("inconsistent model header");
  }
  if (model.params_.objective == "multiclass") model.params_.num_class = model.num_outputs_;
  model.forest_.Build(model.trees_, model.mapper_);
  model.scorer_.Build(model.forest_);
  return model;
}

void GbmModel::Save(const std::string& path) const { WriteFileAtomically(path, Serialize()); }

GbmModel GbmModel::Load(const std::string& path) {
  data::ByteBuffer bytes = data::LoadSource(path);
  return Deserialize(bytes.view(), path);
}

}  // namespace tabforge::gbm

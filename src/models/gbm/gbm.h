// GBM: histogram gradient-boosted decision trees (LightGBM's algorithm: leaf-wise trees over
// quantile bins, native categorical splits, quantized gradients), built on the shared tree
// engine in models/tree. Reference: Ke et al., "LightGBM: A Highly Efficient Gradient Boosting
// Decision Tree", NeurIPS 2017; Shi et al., "Quantized Training of Gradient Boosting Decision
// Trees", NeurIPS 2022. Unlike RF/XT (same engine), trees are fitted to gradients one after
// another and their outputs summed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/timer.h"
#include "features/feature_matrix.h"
#include "models/tree/binning.h"
#include "models/tree/compact_forest.h"
#include "models/tree/mask_scorer.h"
#include "models/tree/tree.h"

namespace tabforge::gbm {

// Parameters under LightGBM's names; defaults are LightGBM's.
struct GbmParams {
  // binary, multiclass, regression (L2), regression_l1, huber, quantile; FromJson also takes
  // LightGBM's aliases (l2, mse, l1, mae, ...)
  std::string objective = "binary";
  double alpha = 0.9;          // huber: the delta; quantile: the target quantile
  int num_class = 1;           // classes for multiclass (set from the data by callers)
  int num_iterations = 100;    // boosting rounds, at most
  double learning_rate = 0.1;  // shrinkage of every tree's output
  int num_leaves = 31;         // leaves per tree, at most
  int max_depth = -1;          // depth limit; <= 0 means none
  std::int64_t min_data_in_leaf = 20;
  double min_sum_hessian_in_leaf = 1e-3;
  double lambda_l1 = 0;
  double lambda_l2 = 0;
  double min_gain_to_split = 0;
  // |leaf output| cap before shrinkage; 0 = none. The default (-1) caps multiclass leaves at
  // 10 and leaves other objectives uncapped: softmax Newton steps on rare classes divide by
  // tiny hessians and diverge without it (kddcup99: LightGBM's defaults reach 0.97 accuracy).
  double max_delta_step = -1;
  double feature_fraction = 1;         // features sampled per tree
  double feature_fraction_bynode = 1;  // features sampled per node (of the tree's)
  double bagging_fraction = 1;         // rows sampled ...
  int bagging_freq = 0;                // ... every this many rounds (0 = no bagging)
  int max_bin = 255;
  int min_data_in_bin = 3;
  std::int64_t bin_construct_sample_cnt = 200000;
  int max_cat_to_onehot = 4;
  int max_cat_threshold = 32;
  double cat_smooth = 10;
  double cat_l2 = 10;
  std::int64_t min_data_per_group = 100;
  // Megabytes of histograms kept at once (LightGBM's histogram_pool_size); the default (-1)
  // is an eighth of the bin matrix's size, at least 3 MB. The trees do not depend on it.
  double histogram_pool_size = -1;
  // Training rows whose bins are equal on every feature are merged into one for growing the
  // trees (tree::RowGroups): "auto" merges when that leaves at most 3/4 of the rows, "always"
  // and "never" force it. The trees are the same either way; only the time changes.
  std::string merge_equal_rows = "auto";
  bool extra_trees = false;  // one random threshold per feature and node (LightGBM's extra_trees)
  double scale_pos_weight = 1;  // binary: weight of positive rows
  // Classification: "balanced" (rows / (classes * class rows), as scikit-learn) or, given as a
  // JSON array, one weight per class in class order (class_weights). Empty: unit weights.
  std::string class_weight;
  std::vector<double> class_weights;
  bool use_quantized_grad = true;  // gradients quantized to num_grad_quant_bins levels; when
                                   // false, to the finest integer resolution the histogram
                                   // sums hold (at least 2^31 / rows levels each side)
  // Quantization levels of the gradients (quantized training). LightGBM's default is 4; the
  // sums here are 64-bit whatever the level count, so finer levels cost nothing, and 4 levels
  // lost accuracy (letter log loss 0.141 against 0.099 with 64; Adult AUC 0.9273 / 0.9276).
  int num_grad_quant_bins = 64;
  // Stop after this many rounds without improvement (0 = off); -1 is AutoGluon's adaptive
  // patience: 20 rounds plus 30% of the best round so far.
  int early_stopping_round = 0;
  std::string metric;  // early-stopping metric (src/metrics name); "" = the
                       // objective's loss (log_loss or root_mean_squared_error)
  std::uint64_t seed = 0;
  // Where the rounds run: "cpu", or "cuda" (also "gpu"): the CUDA backend, which grows the same
  // trees (byte-identical model files); without a usable GPU the fit runs on the CPU and the
  // report says why (FitReport::device_note).
  std::string device = "cpu";
  int gpu_device_id = 0;             // CUDA device ordinal
  double gpu_memory_fraction = 0.9;  // of the device's free memory, the most the fit may take

  // Throws InvalidInput naming the parameter and its valid range.
  void Validate() const;
  // Parameters from a JSON object with LightGBM's names (and aliases such as eta,
  // num_boost_round, n_estimators, colsample_bytree, subsample, reg_lambda); unknown keys are
  // InvalidInput listing the valid ones. Keys not given keep their value in `base`.
  static GbmParams FromJson(const std::string& json);
  static GbmParams FromJson(const std::string& json, const GbmParams& base);
};

// Whether `objective` is one GbmParams accepts / one of the regression objectives.
bool IsKnownObjective(const std::string& objective);
bool IsRegressionObjective(const std::string& objective);

// Why and when training ended.
struct FitReport {
  int iterations = 0;       // rounds kept in the model
  int rounds_run = 0;       // rounds trained
  std::string stop_reason;  // "num_iterations reached", "early stopping", "deadline",
                            // "diverged" (a round gave non-finite leaf values; it is dropped)
  double best_score = 0;    // validation score at the kept iteration (when validated)
  double bin_seconds = 0;
  double upload_seconds = 0;  // CUDA: moving the bins and rows to the device (not in train)
  double train_seconds = 0;
  std::int64_t bin_matrix_bytes = 0;          // the binned training rows
  std::string device = "cpu";                 // where the rounds ran: "cpu" or "cuda:ID NAME"
  std::string device_note;                    // when CUDA was asked for but not used: why
  std::int64_t device_bytes = 0;              // device memory the fit reserved (CUDA)
  std::int64_t device_batches = 0;            // CUDA: batches of leaf splits the trees took
  std::int64_t device_histogram_bytes = 0;    // CUDA: bytes the histogram builds read
  std::int64_t device_unused_split_rows = 0;  // CUDA: histogram rows of splits made ahead, unused
};

class GbmModel {
 public:
  // Trains on `train` with `labels` (class index 0..K-1 for classification, the target for
  // regression) and optional row `weights` (empty: unit). With a validation set, early
  // stopping keeps the best iteration. Stops at `deadline`, keeping the rounds done.
  static GbmModel Fit(const features::FeatureMatrix& train, std::span<const double> labels,
                      std::span<const double> weights, const features::FeatureMatrix* valid,
                      std::span<const double> valid_labels, const GbmParams& params, int threads,
                      const Deadline& deadline = Deadline());

  // Raw scores, row-major num_rows x num_outputs (log-odds, softmax inputs or values). A model
  // whose device is "cuda" scores large batches on the GPU (the same doubles).
  std::vector<double> PredictRaw(const features::FeatureMatrix& features, int threads = 0) const;
  // The same scores computed on the model's CUDA device whatever the batch's size (tests and
  // benchmarks compare the two); false, with the reason in `why`, where it could not run.
  bool PredictRawOnDevice(const features::FeatureMatrix& features, std::vector<double>& raw,
                          std::string& why) const;
  // Raw scores of one row from its feature values in FeatureMatrix order (numeric values, NaN
  // for missing; categorical codes) into out[0, num_outputs()). Allocates nothing.
  void PredictRowRaw(const float* numeric, const std::int32_t* categorical, double* out) const;
  // Probabilities (num_rows x 2 for binary, x K for multiclass) or values (regression).
  std::vector<double> Predict(const features::FeatureMatrix& features, int threads = 0) const;

  int num_outputs() const { return num_outputs_; }
  const FitReport& report() const { return report_; }
  const std::vector<tree::Tree>& trees() const { return trees_; }
  const tree::BinMapper& mapper() const { return mapper_; }
  const tree::CompactForest& forest() const { return forest_; }  // trees() laid out to predict
  const std::vector<double>& init_score() const { return init_score_; }
  // Split counts and gains per feature (numeric features first, then categorical).
  void FeatureImportance(std::vector<double>& splits, std::vector<double>& gains) const;

  // The model as bytes (versioned, checksummed): the same data, parameters and seed give the
  // same bytes whatever the thread count. Deserialize rejects corrupted, truncated or foreign
  // bytes with InvalidInput naming `name`.
  std::string Serialize() const;
  static GbmModel Deserialize(std::string_view bytes, const std::string& name);
  // Serialize() written atomically to `path`; Load reads it back.
  void Save(const std::string& path) const;
  static GbmModel Load(const std::string& path);

 private:
  GbmParams params_;
  int num_outputs_ = 1;             // trees per round
  std::vector<double> init_score_;  // per output
  tree::BinMapper mapper_;
  std::vector<tree::Tree> trees_;  // round-major: round r, output k at r * num_outputs + k
  tree::CompactForest forest_;     // trees_ laid out for prediction
  tree::MaskScorer scorer_;        // forest_ scored by bitmasks (trees of <= 128 leaves)
  FitReport report_;
};

}  // namespace tabforge::gbm

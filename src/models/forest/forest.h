// Random forests and extremely randomized trees (Breiman 2001; Geurts, Ernst and Wehenkel,
// "Extremely randomized trees", 2006) on the shared tree engine: features binned once by the
// GBM's BinMapper, every node split from per-bin class counts (Gini or entropy) or target sums
// (squared error), trees laid out for prediction by the same CompactForest. Each tree draws its
// bootstrap, its features per node and (XT) its thresholds from counter-based randomness keyed
// by (seed, tree, node), and one tree is grown by one thread, so the forest is the same for any
// thread count.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/timer.h"
#include "features/feature_matrix.h"
#include "models/tree/binning.h"
#include "models/tree/compact_forest.h"
#include "models/tree/tree.h"

namespace tabforge::forest {

enum class Criterion { kGini, kEntropy, kSquaredError };

// Parameters under scikit-learn's names; defaults are scikit-learn's, except n_estimators,
// max_leaf_nodes and bootstrap, which are AutoGluon's: its XT bootstraps too (scikit-learn's
// ExtraTrees does not), so that a bagged fit trains one forest and takes its out-of-bag
// predictions instead of training one forest per fold.
struct ForestParams {
  // gini or entropy (classification; log_loss is taken as entropy), squared_error
  // (regression; mse is an alias).
  Criterion criterion = Criterion::kGini;
  int n_estimators = 300;  // trees
  // Features drawn per node: "sqrt", "log2", a fraction in (0, 1] ("0.5") or a count ("7").
  // Empty: sqrt for classification, every feature for regression (scikit-learn's defaults). As
  // in scikit-learn, features constant in the node count among those drawn, and more are drawn
  // only while no valid split has been found.
  std::string max_features;
  int max_depth = 0;                   // depth limit; 0 means none (scikit-learn's None)
  std::int64_t min_samples_split = 2;  // rows a node needs to be split
  std::int64_t min_samples_leaf = 1;   // rows each child keeps, at least
  // Leaves per tree, at most; 0 means none. When set, trees grow best-first (the split that
  // lowers the impurity most goes first), as scikit-learn grows them then.
  int max_leaf_nodes = 15000;
  double min_impurity_decrease = 0;  // a split must lower the weighted impurity this much
  bool bootstrap = true;             // each tree on a bootstrap sample of the rows
  double max_samples = 1;            // bootstrap size as a fraction of the rows
  bool extra_trees = false;          // XT: one random threshold per feature and node
  // Bins per numeric feature (the tree engine's max_bin). Forests grow until leaves are pure, so
  // deep nodes need finer cuts than boosting's 255 bins give: scikit-learn's forests cut between
  // exact values, and at 255 bins California housing's XT lost 0.004 R2 to them (0.8038 against
  // 0.8071 at 1023, over five seeds).
  int max_bin = 1023;
  int min_data_in_bin = 3;  // fewest sampled rows per numeric bin (the tree engine's)
  std::uint64_t seed = 0;   // scikit-learn's random_state
  // Where the trees grow: "cpu", or "cuda" (also "gpu"): the forest grows on the GPU in batches
  // of trees (the CPU's trees, split for split); without a usable GPU, or when the data does not
  // fit, the fit runs on the CPU and the report says why. Extremely randomized trees grow on the
  // CPU either way (faster there; the report says so).
  std::string device = "cpu";
  int gpu_device_id = 0;             // CUDA device ordinal
  double gpu_memory_fraction = 0.9;  // of the device's free memory, the most the fit may take
  // GPU with max_leaf_nodes: the device grows nodes ahead of the CPU's best-first order, those
  // ranking in the top (room left) times this by improvement. Larger: fewer rounds, more nodes
  // evaluated in vain; the trees are the same for any value (at least 1).
  double gpu_lookahead = 1;

  // Throws InvalidInput naming the parameter and its valid range.
  void Validate() const;
  // Parameters from a JSON object with scikit-learn's names (n_estimators, criterion,
  // max_features, max_depth, min_samples_split, min_samples_leaf, max_leaf_nodes,
  // min_impurity_decrease, bootstrap, max_samples, random_state, n_jobs (ignored: the fit's
  // threads apply), max_bin, min_data_in_bin, device, gpu_device_id, gpu_memory_fraction,
  // gpu_lookahead);
  // unknown keys are InvalidInput listing the valid ones. Keys not given keep their value in
  // `base`.
  static ForestParams FromJson(const std::string& json, const ForestParams& base);
};

// The count of features each node tries for `features` features (at least 1).
int FeaturesPerNode(const std::string& max_features, bool classification, int features);

struct ForestReport {
  int trees = 0;            // trees kept
  std::string stop_reason;  // "n_estimators reached" or "deadline"
  double bin_seconds = 0;
  double train_seconds = 0;
  std::string device = "cpu";  // where the trees grew: "cpu" or the GPU's name
  // Why a GPU asked for was not used, or where the GPU fit's time went.
  std::string device_note;
};

class ForestModel {
 public:
  // Trains `params.n_estimators` trees on `train`; `labels` are class indices 0..K-1
  // (`num_classes` >= 2) or targets (`num_classes` 1: regression). Stops at `deadline`
  // keeping the trees grown (at least one). With `out_of_bag` set, also fills it (row-major
  // rows x outputs) with each row's prediction by the trees whose bootstrap left it out; rows
  // no tree left out get the whole forest's prediction.
  static ForestModel Fit(const features::FeatureMatrix& train, std::span<const double> labels,
                         int num_classes, const ForestParams& params, int threads,
                         const Deadline& deadline = Deadline(),
                         std::vector<double>* out_of_bag = nullptr);

  // Row-major rows x outputs: class probabilities (the mean of the trees' leaf class
  // fractions) or values (the mean of the leaf means).
  std::vector<double> Predict(const features::FeatureMatrix& features, int threads = 0) const;

  int num_outputs() const { return num_outputs_; }
  const std::vector<tree::Tree>& trees() const { return trees_; }
  const tree::BinMapper& mapper() const { return mapper_; }  // the trees' bins
  const ForestReport& report() const { return report_; }

  // Versioned, checksummed bytes; Deserialize rejects corrupted or foreign bytes naming `name`.
  std::string Serialize() const;
  static ForestModel Deserialize(std::string_view bytes, const std::string& name);

 private:
  void Layout(int threads = 1);  // builds forest_ from trees_ on up to `threads` threads

  int num_outputs_ = 1;  // classes, or 1 for regression
  tree::BinMapper mapper_;
  std::vector<tree::Tree> trees_;
  // Per leaf of every tree (trees in order, leaves in order: CompactForest's leaf numbering),
  // num_outputs_ values: class fractions or the leaf's mean.
  std::vector<double> leaf_outputs_;
  tree::CompactForest forest_;
  ForestReport report_;
};

}  // namespace tabforge::forest

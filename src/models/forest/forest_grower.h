// One tree of a random forest (or of extremely randomized trees), grown from per-bin statistics
// of the node's rows: weighted class counts (Gini, entropy) or weighted target sums (squared
// error). Nodes try features in a random order drawn per node until `features_per_node`
// features that vary in the node were tried (more when none of them gave a valid split, as
// scikit-learn does). A grower holds the scratch of one thread and is reused across trees.
#pragma once

#include <cstdint>
#include <vector>

#include "models/forest/forest.h"
#include "models/tree/binning.h"
#include "models/tree/tree.h"

namespace tabforge::forest {

// How every tree of the forest grows.
struct TreeSpec {
  Criterion criterion = Criterion::kGini;
  int num_classes = 2;  // classification; 1 for regression
  int features_per_node = 1;
  int max_depth = 0;  // 0: none
  std::int64_t min_samples_split = 2;
  std::int64_t min_samples_leaf = 1;
  int max_leaf_nodes = 0;  // 0: none (depth-first); else best-first up to this many leaves
  double min_impurity_decrease = 0;
  bool extra_trees = false;
};

// The bin matrix feature by feature (ColumnBins::Of): a node's rows of one feature are read
// from one column, which stays in cache, where the row-major matrix would spread them over a
// cache line a row.
struct ColumnBins {
  std::int64_t num_rows = 0;
  int num_features = 0;
  std::vector<std::uint8_t> bins8;    // up to 256 bins a feature
  std::vector<std::uint16_t> bins16;  // else

  bool wide() const { return !bins16.empty(); }
  // The same bins as the row-major `bins`, transposed in parallel over blocks of rows.
  static ColumnBins Of(const tree::BinMatrix& bins, int threads);
};

// The training rows every tree reads (borrowed).
struct TrainingRows {
  const ColumnBins* bins = nullptr;
  const tree::BinMapper* mapper = nullptr;
  const std::int32_t* classes = nullptr;  // classification: the class of each row
  // Regression: the target of each row, centred and made a whole multiple of a unit
  // (QuantizeTargets in forest_batch.h), so that every weighted sum is exact in any order.
  const double* targets = nullptr;
  // Regression: the same targets as whole counts of `value_unit`.
  const long long* target_units = nullptr;
  double value_unit = 1;
  // Numeric features: each value bin's smallest training value (BinLowestValues), between which
  // extremely randomized trees draw their thresholds.
  const std::vector<std::vector<double>>* bin_lows = nullptr;
};

// For each numeric feature (categorical ones: empty), the smallest training value of each value
// bin, so that extremely randomized trees can draw a threshold uniformly between a node's
// smallest and largest value as scikit-learn does: the draw then cuts after bin b when it falls
// below bin b+1's smallest value. A bin without training rows gets its lower bound.
std::vector<std::vector<double>> BinLowestValues(const features::FeatureMatrix& features,
                                                 const tree::BinMatrix& bins,
                                                 const tree::BinMapper& mapper, int threads);

// Per feature, whether it holds one value in a node: one word for up to 64 features (copied
// with each split, so most trees allocate nothing for them), bytes beyond.
class ConstantFlags {
 public:
  explicit ConstantFlags(int features = 0)
      : many_(features > 64 ? static_cast<std::size_t>(features) : 0, 0) {}
  bool operator[](int feature) const {
    return many_.empty() ? (word_ >> feature) & 1u : many_[static_cast<std::size_t>(feature)] != 0;
  }
  void Set(int feature) {
    if (many_.empty()) {
      word_ |= std::uint64_t(1) << feature;
    } else {
      many_[static_cast<std::size_t>(feature)] = 1;
    }
  }

 private:
  std::uint64_t word_ = 0;
  std::vector<std::uint8_t> many_;
};

class ForestTreeGrower {
 public:
  ForestTreeGrower(const TrainingRows& data, const TreeSpec& spec);
  ~ForestTreeGrower();

  // Grows a tree on `rows` (distinct row indices, ascending; reordered in place) where row r
  // counts `weights[r]` times (its bootstrap multiplicity; indexed by row). Randomness is
  // keyed by (seed, tree_index, node). Appends the tree's leaf outputs (leaf by leaf,
  // num_classes class fractions, or 1 weighted mean of the centred targets) to
  // `leaf_outputs`.
  tree::Tree Grow(std::vector<std::int32_t>& rows, const std::uint32_t* weights, std::uint64_t seed,
                  std::uint64_t tree_index, std::vector<double>& leaf_outputs);

 private:
  struct Candidate;
  struct Leaf;
  // Sums of the node's rows [begin, end) of order_ into `sums` (width_ values).
  void NodeSums(std::int64_t begin, std::int64_t end, double* sums) const;
  // The best split of the node, or an invalid one when it should stay a leaf. `constant` flags
  // the features known to hold one value in the node (found in an ancestor, or here: a
  // feature constant in a node is constant in all its descendants, so they skip it).
  Candidate FindSplit(std::int64_t begin, std::int64_t end, int depth, std::uint64_t node_key,
                      ConstantFlags& constant);
  // Evaluates `feature` on the node; returns false when the feature has one value there.
  bool TryFeature(int feature, std::int64_t begin, std::int64_t end, const double* parent,
                  double parent_score, Candidate& best);
  // TryFeature for extremely randomized trees: two passes over the rows (the value or category
  // range, then the sums left of the one drawn threshold), no histogram.
  bool TryExtraTrees(int feature, std::int64_t begin, std::int64_t end, const double* parent,
                     double parent_score, std::uint64_t node_key, Candidate& best);
  // The largest improvement a split of a two-row node can make when neither row is missing
  // the feature (one row on each side, scored as TryExtraTrees scores them).
  double TwoRowCeiling(const double* parent, double parent_score);
  // Whether a row of order_[begin, end) is missing `feature` (numeric features only).
  bool RowsMissing(int feature, std::int64_t begin, std::int64_t end) const;
  // Its body for one bin width (`column_bins`: the feature's column of ColumnBins).
  template <typename Bin>
  bool TryExtraTreesOf(const Bin* column_bins, int feature, std::int64_t begin, std::int64_t end,
                       const double* parent, double parent_score, std::uint64_t node_key,
                       Candidate& best);
  // Makes the split with left sums `left` (the right ones are parent - left) `best` when it
  // improves more; returns whether it did (the caller then sets the threshold or bin set).
  bool Keep(const double* left, std::int64_t left_rows, const double* parent, double parent_score,
            int feature, bool categorical, bool default_left, Candidate& best);
  // The criterion's score of sums (higher is purer; improvements are score differences).
  double Score(const double* sums) const;

  TrainingRows data_;
  TreeSpec spec_;
  int width_ = 2;  // statistics per bin: classes, or (weight, weighted target)
  std::uint64_t seed_ = 0;
  std::uint64_t tree_index_ = 0;
  std::uint64_t order_key_ = 0;      // the tree's feature-order stream (core/random.h keys)
  std::uint64_t threshold_key_ = 0;  // the tree's threshold stream
  double root_weight_ = 1;           // the tree's total row weight (min_impurity_decrease's scale)
  // Scratch, reused: the node's row weights and classes (or targets) in row order, per-bin
  // sums and row counts (zero between uses), the bins the node uses, a partition buffer.
  std::vector<std::int32_t> order_;
  const std::uint32_t* weights_ = nullptr;
  std::vector<std::uint32_t> node_count_;  // the node's rows' weights (whole bootstrap counts)
  std::vector<double> node_value_;
  std::vector<std::int64_t> node_units_;  // weight times target, in units (regression)
  std::vector<std::int32_t> node_class_;
  std::vector<double> histogram_;
  std::vector<std::int64_t> bin_rows_;
  std::vector<double> spare_histogram_;  // the second copy of large nodes' sums (zero between uses)
  std::vector<std::int64_t> spare_bin_rows_;
  std::vector<int> used_;
  std::vector<std::uint64_t> used_bits_;  // small nodes: a bit per bin in use (zero between uses)
  std::vector<double> parent_;
  std::vector<double> left_;
  std::vector<std::uint64_t> class_counts_;  // extremely randomized trees: left class counts
  std::vector<double> parent_missing_;
  std::vector<double> right_;
  std::vector<std::int32_t> spare_;
  std::vector<std::uint16_t> node_bins_;  // extremely randomized trees: one feature's node bins
  std::vector<int> feature_order_;
  std::vector<Leaf> leaves_;  // the tree's leaves while growing (Grow)
};

}  // namespace tabforge::forest
